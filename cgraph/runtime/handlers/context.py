"""What a step handler may see and use: a narrow, read-only `StepContext`, the step's frame.

The frame is built once per step: the view, the graph and the state spec the step runs,
and what the designer's templates read there (`template_context`), built on first use and
kept for the frame's view. A later part of the step that sees its own effects
(`StepContext.seeing`) gets a new frame, whose templates read the changed view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cgraph.runtime.ask.choosing import Prompts
from cgraph.runtime.ask.questions import Ask, Posed
from cgraph.runtime.memory.gateway import Recalled
from cgraph.runtime.needs import Steps
from cgraph.runtime.ports import ExitChooser, RequestKind
from cgraph.runtime.state.outcomes import Emit
from cgraph.runtime.state.view import View, template_context
from cgraph.runtime.tools.calls import Journal, ToolCaller
from cgraph.spec.model import AnyState, Graph


class GraphLookup(Protocol):
    """The root graph and the sub-graphs it enters, by key (`cgraph.runtime.routes.graphs`)."""

    root: Graph

    def get(self, key: str) -> Graph: ...

    def child_key(self, parent_key: str, relative: str) -> str: ...

    def folder_of(self, graph: Graph) -> Path: ...


class RequestBuilder(Prompts, Protocol):
    """Poses the question of a step, and renders its prompt for a model chooser
    (`cgraph.runtime.ask.requests.Prompter`)."""

    def pose(
        self,
        view: View,
        kind: RequestKind,
        *,
        graph: Graph,
        state_id: str,
        state: AnyState | None,
        ask: Ask = ...,
        templates: Callable[[str], Mapping[str, Any]] | None = ...,
    ) -> Posed: ...


class MemoryGate(Protocol):
    """The step's side of memory (`cgraph.runtime.memory.gateway.MemoryGateway`): never raises."""

    def recall(
        self, here: str, queries: Sequence[str], tiers: Sequence[str], top_k: int
    ) -> Steps[Recalled]: ...

    def metadata(self) -> Steps[tuple[dict[str, Any], tuple[Emit, ...]]]: ...


@dataclass(frozen=True, slots=True)
class StepContext:
    """Everything a handler may use; see the module docstring."""

    view: View
    graph: Graph
    """The graph the step runs in (the current one: a sub-graph's, inside it)."""
    spec: AnyState | None
    """The state the step runs (None before a conditional start is chosen)."""
    graphs: GraphLookup
    requests: RequestBuilder
    chooser: ExitChooser
    """Chooses the exits (the offline chooser, or a language model asked through the
    runtime's own chooser)."""
    calls_tools: bool
    """The model calls the tools an action state offers (a language model that can)."""
    memory: MemoryGate
    journal: Journal
    """Writes a tool call's intent ahead of the call (the one write a step makes)."""
    tools: ToolCaller
    _seen: dict[str, Mapping[str, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """The template contexts built for this view, by state id: filled on first use, so a
    step that renders nothing builds none (the frame is frozen, this cache is not)."""

    @property
    def root(self) -> Graph:
        return self.graphs.root

    def templates(self, state_id: str | None = None) -> Mapping[str, Any]:
        """What the designer's templates read at `state_id` (the view's state by default),
        built once for this frame's view. Shared by the step's renders: read, never
        changed (the templates' sandbox changes no value either)."""
        state_id = self.view.state_id if state_id is None else state_id
        seen = self._seen.get(state_id)
        if seen is None:
            seen = self._seen[state_id] = template_context(self.view, self.graph, state_id)
        return seen

    def seeing(self, **changes: Any) -> StepContext:
        """A new frame with the view changed (a step's own effects, in its later part):
        its templates read the changed view."""
        # Built field by field, not by `dataclasses.replace` (which reads every field by
        # name): a step sees its own effects this way once or twice. Every field is
        # required, so one added and not passed here fails at once.
        return StepContext(
            self.view._replace(**changes),
            self.graph,
            self.spec,
            self.graphs,
            self.requests,
            self.chooser,
            self.calls_tools,
            self.memory,
            self.journal,
            self.tools,
        )
