"""The checks an outcome passes before the engine applies it: declared moves, loop limits."""

from __future__ import annotations

from cgraph.errors import TransitionError
from cgraph.runtime.routes.exits import check_anywhere, check_start, check_transition
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.outcomes import Enter, Move, Stop
from cgraph.runtime.state.snapshot import SessionState
from cgraph.spec.model import is_cross
from cgraph.spec.names import END, RESUME, qualify


def guard(outcome: Move | Enter, graphs: Graphs, state: SessionState) -> Stop | None:
    """The guard that stops `outcome`, or None when it may be applied."""
    try:
        if isinstance(outcome, Enter):
            check_start(graphs.get(outcome.graph), outcome.target, _entry(graphs, outcome, state))
        elif outcome.owner is not None:
            check_anywhere(graphs.get(outcome.owner), outcome.target)
        else:
            check_transition(graphs.get(state.frame.graph), state.frame.state, outcome.target)
    except TransitionError as err:
        return Stop("undeclared_transition", err.message)
    limit = graphs.root.limits.max_transitions_per_turn
    if state.scratch.transitions >= limit:
        return Stop("max_transitions_per_turn", f"more than {limit} transitions in a turn")
    key = outcome.graph if isinstance(outcome, Enter) else state.frame.graph
    if isinstance(outcome, Move) and outcome.owner is not None:
        key = outcome.owner
    if outcome.target in (END, RESUME) or is_cross(outcome.target):
        return None
    cap = visit_cap(graphs, key, outcome.target)
    name = qualify(key, outcome.target)
    if cap is not None and state.visits.get(name, 0) >= cap:
        detail = f"`{name}` was entered {cap} times already"
        return Stop("max_visits", detail, capped=outcome.target, capped_at=name)
    return None


def stay_guard(graphs: Graphs, state: SessionState) -> Stop | None:
    """The `max_turns` guard when the current state would answer one turn more than it may."""
    spec = graphs.get(state.frame.graph).states.get(state.frame.state)
    cap = spec.max_turns if spec is not None else None
    if cap is None or state.turns_here < cap:
        return None
    name = qualify(state.frame.graph, state.frame.state)
    detail = f"`{name}` answered {cap} turns in a row already"
    return Stop("max_turns", detail, capped=state.frame.state, capped_at=name)


def _entry(graphs: Graphs, outcome: Enter, state: SessionState) -> str | None:
    """The `enter:` of the `graph` state that enters a sub-graph, if any."""
    if not (outcome.push and state.started):
        return None
    spec = graphs.get(state.frame.graph).states.get(state.frame.state)
    return spec.enter if spec is not None else None


def visit_cap(graphs: Graphs, key: str, state_id: str) -> int | None:
    """The fewest visits any of the state's own, its graph's and the root's limits allow."""
    graph, root = graphs.get(key), graphs.root
    state = graph.states.get(state_id)
    own = state.max_visits if state is not None else None
    caps = [c for c in (own, graph.limits.max_visits.get(state_id)) if c is not None]
    if key == "" or state_id in root.limits.max_visits:
        caps += [c for c in (root.limits.max_visits.get(state_id),) if c is not None]
    return min(caps) if caps else None


def limit_route(stop: Stop, graphs: Graphs, state: SessionState) -> tuple[str, str] | None:
    """(owning graph key, target) of the `on_limit` that routes this guard, once per turn:
    the capped state's own, else the nearest enclosing graph's `limits.on_limit`."""
    if stop.guard is None or state.scratch.limited:
        return None
    if stop.capped is not None:
        capped = graphs.get(state.frame.graph).states.get(stop.capped)
        if capped is not None and capped.on_limit:
            return state.frame.graph, capped.on_limit
    for frame in reversed(state.stack):
        target = graphs.get(frame.graph).limits.on_limit.get(stop.guard)  # type: ignore[call-overload]
        if target:
            return frame.graph, target
    return None
