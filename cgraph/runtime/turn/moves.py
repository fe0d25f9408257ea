"""Where an applied move takes the session: the stack of graphs, the visits, the slots,
and the interruptions waiting to be taken up again.

The applier has checked the outcome against the guards; these pure functions return the
next state and what was crossed (an `Arrival`), which the applier records as a
`transition` event. No events, no model: the stack rules in one place.

A sub-graph's slots live in its frame: they start at their defaults (and what its
`graph` state passes in) each time it is entered, and go with it when it ends, but for
those it `returns`. A `resume: true` move saves the stack first; `RESUME` (or the end of
the sub-graph such a move entered) takes the latest saved stack up again. An interruption
opened inside a sub-graph is closed when that sub-graph ends (there is nothing left to go
back to), and every one when the session ends. A `handoff: true` move hands the turn's
message to the state it enters (`handed`), to each state once a turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import cleared, frame_defaults, routed
from cgraph.runtime.state.outcomes import Enter, Move
from cgraph.runtime.state.snapshot import Frame, SessionState, jsonable
from cgraph.spec.model import CROSS, AnyState, Graph, is_cross
from cgraph.spec.names import END, RESUME, START


@dataclass(frozen=True, slots=True)
class Arrival:
    """One crossing: from `source` to `target` (qualified names, or START and END)."""

    source: str
    target: str
    entered: bool = True
    """A state was entered (a visit, its context strategy); False when a sub-graph ended
    back into its parent's `graph` state, an interruption ended, or the session ended."""
    resumed: bool = False
    """An interruption ended: the conversation is back where it was."""


def current(state: SessionState, graphs: Graphs) -> tuple[Graph, AnyState | None]:
    """The current graph and state (no state before a conditional start is chosen)."""
    graph = graphs.get(state.frame.graph)
    return graph, graph.states.get(state.frame.state)


def enter(state: SessionState, graphs: Graphs, outcome: Enter) -> tuple[SessionState, Arrival]:
    """Start a graph: the root (replacing the stack) or a sub-graph (pushed, with its own
    slots)."""
    source = state.here if state.started else START
    slots = jsonable(dict(outcome.slots)) if outcome.push else {}
    frame = Frame(
        outcome.graph, outcome.target, slots=slots, run=_run(state) if outcome.push else ""
    )
    stack = (*state.stack, frame) if outcome.push else (frame,)
    moved = state._replace(stack=stack, started=True)
    if outcome.push:
        moved = adopted(moved, graphs.get(outcome.graph).variables)
    return _arrived(moved, graphs, source)


def move(state: SessionState, graphs: Graphs, outcome: Move) -> tuple[SessionState, Arrival]:
    """Take an exit; a target of END ends a sub-graph (back to its parent, or out of the
    interruption that entered it) or the session (the Arrival's target is END and the
    stack is left where it was); `RESUME` ends an interruption."""
    source, stack = state.here, state.stack
    if outcome.drop and state.interrupted:  # closed: the state it left is not taken up
        state = state._replace(interrupted=state.interrupted[:-1])
    if outcome.resume:  # where to come back to, before anything is left
        state = state._replace(interrupted=(*state.interrupted, stack))
    if outcome.owner is not None:  # a global exit or `on_limit` leaves inner graphs
        while len(stack) > 1 and stack[-1].graph != outcome.owner:
            stack = stack[:-1]
        state = state._replace(stack=stack)
    if outcome.target == RESUME:
        return resumed(state, source)
    if is_cross(outcome.target):
        return _cross(state, graphs, source, outcome.target)
    if outcome.target != END:
        frame = stack[-1]._replace(state=outcome.target, returned=False, resumes=outcome.resume)
        arrived, arrival = _arrived(state._replace(stack=(*stack[:-1], frame)), graphs, source)
        return (handed(arrived, source) if outcome.handoff else arrived), arrival
    if len(stack) > 1:  # a sub-graph ended: back to the parent's `graph` state
        return _returned(state, graphs, source)
    # The session ends: nothing is left to go back to.
    return state._replace(interrupted=()), Arrival(source, END, entered=False)


def resumed(state: SessionState, source: str) -> tuple[SessionState, Arrival]:
    """The latest interruption ends: its saved stack is taken up again, and the state it
    left asks its question again (it counts as entered this turn, not as a new visit)."""
    if not state.interrupted:  # nothing to go back to: the conversation stays where it is
        return state, Arrival(source, source, entered=False)
    *older, saved = state.interrupted
    back = state._replace(stack=saved, interrupted=tuple(older), turns_here=0)
    back = back.with_scratch(entered=True, resumed=True, handed="")
    return back, Arrival(source, back.here, entered=False, resumed=True)


def _returned(state: SessionState, graphs: Graphs, source: str) -> tuple[SessionState, Arrival]:
    """A sub-graph ended: the slots it `returns` go to the caller, and the parent's
    `graph` state continues (or, when an interruption entered it, the interruption ends)."""
    ended, parent = state.stack[-1], state.stack[-2]
    returns = graphs.get(ended.graph).returns
    handed = {name: ended.slots[name] for name in returns if name in ended.slots}
    back = state._replace(
        stack=(*state.stack[:-2], parent._replace(returned=True)),
        interrupted=_outliving(state.interrupted, len(state.stack) - 1, ended),
    )
    back = routed(back, graphs, handed) if handed else back
    if parent.resumes and back.interrupted:
        return resumed(back, source)
    back = back._replace(turns_here=0).with_scratch(entered=True, resumed=False, handed="")
    return back, Arrival(source, back.here, entered=False)


def _outliving(
    interrupted: tuple[tuple[Frame, ...], ...], depth: int, ended: Frame
) -> tuple[tuple[Frame, ...], ...]:
    """The interruptions still open once the sub-graph run `ended` (at `depth` in the
    stack) is over: one opened inside it has nothing left to go back to."""
    return tuple(
        saved
        for saved in interrupted
        if len(saved) <= depth or (saved[depth].graph, saved[depth].run) != (ended.graph, ended.run)
    )


def _run(state: SessionState) -> str:
    """A sub-graph run's mark: the turn and step that enter it (one entry a step)."""
    return f"{state.turn}.{state.scratch.step}"


def _cross(
    state: SessionState, graphs: Graphs, source: str, target: str
) -> tuple[SessionState, Arrival]:
    """`file.yaml#state`: the other graph takes this graph's place in the stack, so when
    it ends, the conversation goes on where this graph would have."""
    file, _, name = target.partition(CROSS)
    key = graphs.child_key(state.frame.graph, file)
    graph = graphs.get(key)
    frame = Frame(key, name, slots=jsonable(frame_defaults(graph)), run=_run(state))
    crossed = state._replace(stack=(*state.stack[:-1], frame))
    return _arrived(adopted(crossed, graph.variables), graphs, source)


def _arrived(state: SessionState, graphs: Graphs, source: str) -> tuple[SessionState, Arrival]:
    target = state.here
    visits = {**state.visits, target: state.visits.get(target, 0) + 1}
    scratch = state.scratch._replace(entered=True, resumed=False, handed="")
    arrived = state._replace(visits=visits, turns_here=0, clarifications=0, scratch=scratch)
    spec = current(arrived, graphs)[1]
    reset = spec.reset if spec is not None else ()
    return cleared(arrived, graphs, reset) if reset else arrived, Arrival(source, target)


def handed(state: SessionState, source: str) -> SessionState:
    """The state just entered reads the turn's message as said to it (`handoff: true`),
    unless the message was handed to it already this turn: then it is entered as by any
    exit, so two states that hand a message to each other cannot loop."""
    scratch = state.scratch
    if state.here in scratch.handed_to:
        return state
    return state.with_scratch(handed=source, handed_to=(*scratch.handed_to, state.here))


def adopted(state: SessionState, declared: Mapping[str, Any]) -> SessionState:
    """A sub-graph's declared variables join the session's, without overwriting (its slots
    are its own: they live in its frame)."""
    missing = {k: v for k, v in declared.items() if k not in state.variables}
    if not missing:
        return state
    return state._replace(variables={**state.variables, **jsonable(missing)})
