"""Where an applied move takes the session: the stack of graphs, the visits, the variables.

The applier has checked the outcome against the guards; these pure functions return the
next state and what was crossed (an `Arrival`), which the applier records as a
`transition` event. No events, no model: the stack rules in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import slot_defaults
from cgraph.runtime.state.outcomes import Enter, Move
from cgraph.runtime.state.snapshot import Frame, SessionState, jsonable
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


def current(state: SessionState, graphs: Graphs) -> tuple[Graph, AnyState | None]:
    """The current graph and state (no state before a conditional start is chosen)."""
    graph = graphs.get(state.frame.graph)
    return graph, graph.states.get(state.frame.state)


def enter(state: SessionState, graphs: Graphs, outcome: Enter) -> tuple[SessionState, Arrival]:
    """Start a graph: the root (replacing the stack) or a sub-graph (pushed)."""
    source = state.here if state.started else START
    frame = Frame(outcome.graph, outcome.target)
    stack = (*state.stack, frame) if outcome.push else (frame,)
    moved = state._replace(stack=stack, started=True)
    if outcome.push:
        moved = adopted(moved, initial_variables(graphs.get(outcome.graph)))
    return _arrived(moved, source)


def move(state: SessionState, graphs: Graphs, outcome: Move) -> tuple[SessionState, Arrival]:
    """Take an exit; a target of END ends a sub-graph (back to its parent) or the session
    (the Arrival's target is END and the stack is left where it was)."""
    source, stack = state.here, state.stack
    if outcome.owner is not None:  # a global exit or `on_limit` leaves inner graphs
        while len(stack) > 1 and stack[-1].graph != outcome.owner:
            stack = stack[:-1]
        state = state._replace(stack=stack)
    if is_cross(outcome.target):
        return _cross(state, graphs, source, outcome.target)
    if outcome.target != END:
        stack = (*stack[:-1], Frame(stack[-1].graph, outcome.target))
        return _arrived(state._replace(stack=stack), source)
    if len(stack) > 1:  # a sub-graph ended: back to the parent's `graph` state
        parent = stack[-2]
        back = state._replace(stack=(*stack[:-2], parent._replace(returned=True)), turns_here=0)
        back = back.with_scratch(entered=True)
        return back, Arrival(source, back.here, entered=False)
    return state, Arrival(source, END, entered=False)


def _cross(
    state: SessionState, graphs: Graphs, source: str, target: str
) -> tuple[SessionState, Arrival]:
    """`file.yaml#state`: the other graph takes this graph's place in the stack, so when
    it ends, the conversation goes on where this graph would have."""
    file, _, name = target.partition(CROSS)
    key = graphs.child_key(state.frame.graph, file)
    crossed = state._replace(stack=(*state.stack[:-1], Frame(key, name)))
    return _arrived(adopted(crossed, initial_variables(graphs.get(key))), source)


def _arrived(state: SessionState, source: str) -> tuple[SessionState, Arrival]:
    target = state.here
    visits = {**state.visits, target: state.visits.get(target, 0) + 1}
    scratch = state.scratch._replace(entered=True)
    return state._replace(visits=visits, turns_here=0, scratch=scratch), Arrival(source, target)


def adopted(state: SessionState, declared: dict[str, Any]) -> SessionState:
    """A sub-graph's declared variables join the session's, without overwriting."""
    missing = {k: v for k, v in declared.items() if k not in state.variables}
    if not missing:
        return state
    return state._replace(variables={**state.variables, **jsonable(missing)})


def initial_variables(graph: Graph) -> dict[str, Any]:
    """What a graph starts with: its slots' defaults, then its declared variables."""
    return {**slot_defaults(graph), **graph.variables}
