"""The checks an outcome passes before the engine applies it: declared moves, loop limits."""

from __future__ import annotations

import re

from cgraph.errors import TransitionError
from cgraph.runtime.routes.exits import check_anywhere, check_start, check_transition
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.outcomes import Enter, Move, Stop
from cgraph.runtime.state.snapshot import Snapshot
from cgraph.spec.model import is_cross
from cgraph.spec.names import END, qualify


def guard(outcome: Move | Enter, graphs: Graphs, snap: Snapshot) -> Stop | None:
    """The guard that stops `outcome`, or None when it may be applied."""
    try:
        if isinstance(outcome, Enter):
            check_start(graphs.get(outcome.graph), outcome.target, _entry(graphs, outcome, snap))
        elif outcome.owner is not None:
            check_anywhere(graphs.get(outcome.owner), outcome.target)
        else:
            check_transition(graphs.get(snap.frame.graph), snap.frame.state, outcome.target)
    except TransitionError as err:
        return Stop("undeclared_transition", err.message)
    limit = graphs.root.limits.max_transitions_per_turn
    if snap.transitions >= limit:
        return Stop("max_transitions_per_turn", f"more than {limit} transitions in a turn")
    key = outcome.graph if isinstance(outcome, Enter) else snap.frame.graph
    if isinstance(outcome, Move) and outcome.owner is not None:
        key = outcome.owner
    if outcome.target == END or is_cross(outcome.target):
        return None
    cap = visit_cap(graphs, key, outcome.target)
    name = qualify(key, outcome.target)
    if cap is not None and snap.visits.get(name, 0) >= cap:
        detail = f"`{name}` was entered {cap} times already"  # `capped_state` reads it
        return Stop("max_visits", detail, capped=outcome.target)
    return None


def stay_guard(graphs: Graphs, snap: Snapshot) -> Stop | None:
    """The `max_turns` guard when the current state would answer one turn more than it may."""
    state = graphs.get(snap.frame.graph).states.get(snap.frame.state)
    cap = getattr(state, "max_turns", None)
    if cap is None or snap.turns_here < cap:
        return None
    name = qualify(snap.frame.graph, snap.frame.state)
    detail = f"`{name}` answered {cap} turns in a row already"  # `capped_state` reads it
    return Stop("max_turns", detail, capped=snap.frame.state)


def _entry(graphs: Graphs, outcome: Enter, snap: Snapshot) -> str | None:
    """The `enter:` of the `graph` state that enters a sub-graph, if any."""
    if not (outcome.push and snap.started):
        return None
    state = graphs.get(snap.frame.graph).states.get(snap.frame.state)
    return getattr(state, "enter", None)


def visit_cap(graphs: Graphs, key: str, state_id: str) -> int | None:
    """The fewest visits any of the state's own, its graph's and the root's limits allow."""
    graph, root = graphs.get(key), graphs.root
    state = graph.states.get(state_id)
    own = state.max_visits if state is not None else None
    caps = [c for c in (own, graph.limits.max_visits.get(state_id)) if c is not None]
    if key == "" or state_id in root.limits.max_visits:
        caps += [c for c in (root.limits.max_visits.get(state_id),) if c is not None]
    return min(caps) if caps else None


_CAPPED = re.compile(r"`([^`]+)` (?:was entered \d+ times|answered \d+ turns in a row) already$")


def capped_state(reason: str) -> str | None:
    """The state a `max_visits` or `max_turns` route was taken for, from the reason of its
    transition (`max_visits: `name` was entered N times already`): the audit's only record
    of it."""
    found = _CAPPED.search(reason)
    return found.group(1) if found else None


def limit_route(stop: Stop, graphs: Graphs, snap: Snapshot) -> tuple[str, str] | None:
    """(owning graph key, target) of the `on_limit` that routes this guard, once per turn:
    the capped state's own, else the nearest enclosing graph's `limits.on_limit`."""
    if stop.guard is None or snap.limited:
        return None
    if stop.capped is not None:
        capped = graphs.get(snap.frame.graph).states.get(stop.capped)
        if capped is not None and capped.on_limit:
            return snap.frame.graph, capped.on_limit
    for frame in reversed(snap.stack):
        target = graphs.get(frame.graph).limits.on_limit.get(stop.guard)  # type: ignore[call-overload]
        if target:
            return frame.graph, target
    return None
