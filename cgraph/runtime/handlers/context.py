"""What a step handler may see and use: a narrow, read-only `StepContext`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from cgraph.runtime.ask.choosing import Prompts
from cgraph.runtime.ask.questions import Ask, Posed
from cgraph.runtime.memory.gateway import Recalled
from cgraph.runtime.needs import Steps
from cgraph.runtime.ports import ExitChooser, RequestKind
from cgraph.runtime.state.outcomes import Emit
from cgraph.runtime.state.view import View
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

    @property
    def root(self) -> Graph:
        return self.graphs.root

    def seeing(self, **changes: Any) -> StepContext:
        """The same context with the view changed (a step's own effects, in its later part)."""
        return replace(self, view=self.view._replace(**changes))
