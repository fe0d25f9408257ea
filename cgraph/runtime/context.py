"""What a step handler may see and use: a narrow, read-only `StepContext`.

A handler gets the graphs, a frozen `View` of the session, a request builder, the model,
the memory gateway, a way to record a tool call's intent and the session's tool runner —
never the engine. Between two parts of one step (recall, then route) a handler sees its
own effects through `StepContext.seeing`, which returns a new context; nothing is written
until the engine applies the outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from cgraph.backends.llm.types import ChatModel, ExitOption, LLMRequest, RequestKind
from cgraph.runtime.outcomes import Emit
from cgraph.runtime.snapshot import Snapshot
from cgraph.spec.model import AnyState, Graph, Tool
from cgraph.spec.names import qualify


class View(NamedTuple):
    """The session as one step sees it (a copy: handlers cannot change the snapshot).

    A named tuple, not a dataclass: one is built for every step, and a handler's later
    part sees its own effects through a changed copy (`StepContext.seeing`).
    """

    session_id: str
    user_id: str
    graph_key: str
    state_id: str
    here: str
    """The current state's qualified name."""
    returned: bool
    """A `graph` state whose sub-graph just ended."""
    turn: int
    step: int
    message: str
    """The user message this turn answers."""
    variables: Mapping[str, Any]
    notes: Sequence[str]
    annotations: Sequence[str]
    memories: tuple[Mapping[str, Any], ...]
    """Memories recalled during this turn, oldest recall first."""
    entered: bool
    """The current state was entered during this turn."""
    opening: bool
    """No user-facing state has answered yet: the user's first message is unanswered."""
    reflections: int
    tool_calls: int = 0
    """Tool calls the model made this turn (for `limits.max_tool_calls`)."""
    frames: tuple[tuple[str, str], ...] = ()
    """(graph key, state) of every graph entered, root first (the current one last)."""

    @property
    def idempotency_key(self) -> str:
        """The same for the same step of the same session, also when a resume repeats it."""
        return f"{self.session_id}:{self.turn}:{self.step}"


def view_of(
    snap: Snapshot,
    transcript: Sequence[Mapping[str, str]],
    turn_so_far: tuple[tuple[Mapping[str, Any], ...], int],
    session_id: str,
    user_id: str,
) -> View:
    """The view of a step, taken from the snapshot and the log: the transcript, and the
    memories recalled and tool calls made so far this turn (`EventLog.turn_so_far`)."""
    frame = snap.frame
    memories, tool_calls = turn_so_far
    return View(
        session_id,
        user_id,
        frame.graph,
        frame.state,
        qualify(frame.graph, frame.state),
        frame.returned,
        snap.turn,
        snap.step,
        snap.pending or _last_user_message(transcript),
        snap.variables,
        snap.notes,
        snap.annotations,
        memories,
        snap.entered,
        snap.last_action is None,
        snap.reflections,
        tool_calls,
        tuple((f.graph, f.state) for f in snap.stack),
    )


def _last_user_message(transcript: Sequence[Mapping[str, str]]) -> str:
    users = (m["content"] for m in reversed(transcript) if m["role"] == "user")
    return next(users, "")


def template_context(view: View, graph: Graph, state_id: str) -> dict[str, Any]:
    """What a designer's Jinja templates (`say:`, `set:`, queries, arguments) may read."""
    return {
        **view.variables,
        "message": view.message,
        "user_id": view.user_id,
        "session_id": view.session_id,
        "turn": view.turn,
        "state": state_id,
        "graph": graph.name,
        "memories": [m["text"] for m in view.memories],
        "notes": list(view.notes),
        "annotations": list(view.annotations),
        "vars": dict(view.variables),
        "metadata": list(getattr(graph.states.get(state_id), "message_metadata", ())),
    }


class GraphLookup(Protocol):
    """The root graph and the sub-graphs it enters, by key (`cgraph.runtime.graphs`)."""

    root: Graph

    def get(self, key: str) -> Graph: ...

    def child_key(self, parent_key: str, relative: str) -> str: ...

    def folder_of(self, graph: Graph) -> Path: ...


class RequestBuilder(Protocol):
    """Renders the request of one question (`cgraph.runtime.prompting.Prompter`)."""

    def build(
        self,
        view: View,
        kind: RequestKind,
        *,
        graph: Graph,
        state_id: str,
        state: AnyState | None,
        options: tuple[ExitOption, ...] = (),
        allow_stay: bool = False,
        history: Sequence[Mapping[str, str]] | None = None,
        extra: Mapping[str, Any] | None = None,
        opening: bool = False,
        slots: Mapping[str, dict[str, Any]] | None = None,
        collect: tuple[str, ...] = (),
    ) -> LLMRequest: ...


@dataclass(frozen=True, slots=True)
class Recalled:
    """Memories found for a step (as the prompt shows them) and the log entries saying so."""

    memories: tuple[Mapping[str, Any], ...]
    events: tuple[Emit, ...]


class ToolCaller(Protocol):
    """Runs a declared tool (`cgraph.runtime.tools.runner.ToolRunner`)."""

    def call(
        self, tool: Tool, folder: Path | None, arguments: Mapping[str, Any], key: str
    ) -> Any: ...


class MemoryGate(Protocol):
    """The step's side of memory (`cgraph.runtime.memory.MemoryGateway`): never raises."""

    def recall(
        self, here: str, queries: Sequence[str], tiers: Sequence[str], top_k: int
    ) -> Recalled: ...

    def metadata(self) -> tuple[dict[str, Any], tuple[Emit, ...]]: ...


@dataclass(frozen=True, slots=True)
class StepContext:
    """Everything a handler may use; see the module docstring."""

    view: View
    graphs: GraphLookup
    requests: RequestBuilder
    model: ChatModel
    memory: MemoryGate
    record_intent: Callable[[Emit], None]
    """Log and commit at once, before an irreversible call (a tool) runs."""
    tools: ToolCaller

    @property
    def root(self) -> Graph:
        return self.graphs.root

    def seeing(self, **changes: Any) -> StepContext:
        """The same context with the view changed (a step's own effects, in its later part)."""
        return replace(self, view=self.view._replace(**changes))
