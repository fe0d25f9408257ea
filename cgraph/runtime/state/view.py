"""The session as one step sees it (`View`), and what a designer's templates may read.

A view is taken from the session's state and its log at the start of a step; a handler
reads it and never changes the session (a later part of the step sees its own effects
through a changed copy, `StepContext.seeing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from cgraph.runtime.state.snapshot import HistoryMarks, SessionState
from cgraph.spec.model import Graph
from cgraph.spec.names import qualify
from cgraph.spec.templating import CLARIFICATIONS


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
    marks: HistoryMarks = HistoryMarks()
    """Where the prompts' history window stands, and the running summary."""
    asked: tuple[str, ...] = ()
    """The exits the last turn's clarifying question named (`SessionState.asked`)."""
    correcting: Mapping[str, Any] = {}
    """Slot values the last turn asked to confirm (`SessionState.correcting`)."""
    offered: bool = False
    """The message that entered this sub-graph is still unread (`TurnScratch.offered`)."""
    waiting: tuple[str, ...] = ()
    """The states open interruptions go back to, the one taken up next last
    (`SessionState.waiting`)."""
    resumed: bool = False
    """The current state was entered this turn by a `RESUME` (`TurnScratch.resumed`)."""
    clarifications: int = 0
    """Clarifying questions asked in the current state (`SessionState.clarifications`)."""
    handed: str = ""
    """The state that handed this turn's message, unanswered, to the current one
    (`TurnScratch.handed`), or ""."""

    @property
    def idempotency_key(self) -> str:
        """The same for the same step of the same session, also when a resume repeats it."""
        return f"{self.session_id}:{self.turn}:{self.step}"


def view_of(
    state: SessionState,
    transcript: Sequence[Mapping[str, str]],
    turn_so_far: tuple[tuple[Mapping[str, Any], ...], int],
    session_id: str,
    user_id: str,
) -> View:
    """The view of a step, taken from the state and the log: the transcript, and the
    memories recalled and tool calls made so far this turn (`EventLog.turn_so_far`)."""
    frame, scratch = state.frame, state.scratch
    memories, tool_calls = turn_so_far
    return View(
        session_id,
        user_id,
        frame.graph,
        frame.state,
        qualify(frame.graph, frame.state),
        frame.returned,
        state.turn,
        scratch.step,
        scratch.pending or _last_user_message(transcript),
        state.readable,
        state.notes,
        state.annotations,
        memories,
        scratch.entered,
        state.last_action is None,
        scratch.reflections,
        tool_calls,
        tuple((f.graph, f.state) for f in state.stack),
        state.marks,
        state.asked,
        state.correcting,
        scratch.offered,
        state.waiting,
        scratch.resumed,
        state.clarifications,
        scratch.handed,
    )


def _last_user_message(transcript: Sequence[Mapping[str, str]]) -> str:
    users = (m["content"] for m in reversed(transcript) if m["role"] == "user")
    return next(users, "")


def template_context(view: View, graph: Graph, state_id: str) -> dict[str, Any]:
    """What a designer's Jinja templates (`say:`, `set:`, queries, arguments) may read."""
    spec = graph.states.get(state_id)
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
        "metadata": list(spec.message_metadata) if spec is not None else [],
        "interrupted": list(view.waiting),
        "resumed": view.resumed,
        CLARIFICATIONS: view.clarifications,
    }
