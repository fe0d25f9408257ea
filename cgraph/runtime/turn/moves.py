"""Where an applied move takes the session: the stack of graphs, the visits, the variables.

The engine has checked the outcome against the guards; these functions change the
snapshot accordingly and say what was crossed (an `Arrival`), which the engine records as
a `transition` event. No events, no model: the stack rules in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import slot_defaults
from cgraph.runtime.state.outcomes import Enter, Move
from cgraph.runtime.state.snapshot import Frame, Snapshot, here
from cgraph.spec.model import CROSS, AnyState, Graph, is_cross
from cgraph.spec.names import END, START


@dataclass(frozen=True, slots=True)
class Arrival:
    """One crossing: from `source` to `target` (qualified names, or START and END)."""

    source: str
    target: str
    entered: bool = True
    """A state was entered (a visit, its context strategy); False when a sub-graph ended
    back into its parent's `graph` state, or the session ended."""


def current(snap: Snapshot, graphs: Graphs) -> tuple[Graph, AnyState | None]:
    """The current graph and state (no state before a conditional start is chosen)."""
    graph = graphs.get(snap.frame.graph)
    return graph, graph.states.get(snap.frame.state)


def enter(snap: Snapshot, graphs: Graphs, outcome: Enter) -> Arrival:
    """Start a graph: the root (replacing the stack) or a sub-graph (pushed)."""
    source = here(snap) if snap.started else START
    frame = Frame(outcome.graph, outcome.target)
    snap.stack = [*snap.stack, frame] if outcome.push else [frame]
    snap.started = True
    if outcome.push:
        snap.adopt_variables(initial_variables(graphs.get(outcome.graph)))
    return _arrived(snap, source)


def move(snap: Snapshot, graphs: Graphs, outcome: Move) -> Arrival:
    """Take an exit; a target of END ends a sub-graph (back to its parent) or the session
    (the Arrival's target is END and the stack is left where it was)."""
    source = here(snap)
    if outcome.owner is not None:  # a global exit or `on_limit` leaves inner graphs
        while len(snap.stack) > 1 and snap.frame.graph != outcome.owner:
            snap.stack.pop()
    if is_cross(outcome.target):
        return _cross(snap, graphs, source, outcome.target)
    if outcome.target != END:
        snap.frame.state, snap.frame.returned = outcome.target, False
        return _arrived(snap, source)
    if len(snap.stack) > 1:  # a sub-graph ended: back to the parent's `graph` state
        snap.stack.pop()
        snap.frame.returned = True
        snap.entered, snap.turns_here = True, 0
        return Arrival(source, here(snap), entered=False)
    return Arrival(source, END, entered=False)


def _cross(snap: Snapshot, graphs: Graphs, source: str, target: str) -> Arrival:
    """`file.yaml#state`: the other graph takes this graph's place in the stack, so when
    it ends, the conversation goes on where this graph would have."""
    file, _, state = target.partition(CROSS)
    key = graphs.child_key(snap.frame.graph, file)
    snap.stack[-1] = Frame(key, state)
    snap.adopt_variables(initial_variables(graphs.get(key)))
    return _arrived(snap, source)


def _arrived(snap: Snapshot, source: str) -> Arrival:
    target = here(snap)
    snap.visits[target] = snap.visits.get(target, 0) + 1
    snap.entered, snap.turns_here = True, 0
    return Arrival(source, target)


def initial_variables(graph: Graph) -> dict[str, Any]:
    """What a graph starts with: its slots' defaults, then its declared variables."""
    return {**slot_defaults(graph), **graph.variables}
