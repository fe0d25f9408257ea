"""Which declared exit or route a recorded transition took: a state's own exit, one of the
graph's global exits, or a route the runtime takes by itself (`on_error`, `on_limit`).

A state's exit is keyed (state, exit id) as the runtime names it (`cgraph.runtime.routes.exits`).
A global exit holds in every state but is one exit of the graph, so it is keyed once,
(`ANY`, its id) — the topology's name for "from every state" — whichever state it was
taken from (a state of a sub-graph included: a sub-graph inherits its parents' global
exits). Its id is its target, numbered where two global exits share one.

The routes are keyed with words no state id can be (ids have no spaces): a state's
`on_error` is (state, "on error"), its own `on_limit` (state, "on limit max_visits", or
"on limit max_turns" when it caps its turns) —
keyed by the state whose visits ran out, not the one the move left — and the graph's
`limits.on_limit` is (`ANY`, "on limit <guard>"), once per graph like a global exit.

A transition records its source, target, exit id and the exit's description; the runtime
numbers a state's exits together with the global exits offered there, so a global exit is
recognised by its target and description, not by its id.
"""

from __future__ import annotations

from collections.abc import Iterable

from cgraph.runtime.routes.exits import ON_ERROR as ERROR_EXIT
from cgraph.runtime.routes.exits import exit_options, unique_ids
from cgraph.runtime.state.records import TransitionRecord
from cgraph.spec.model import GlobalExit, Graph
from cgraph.spec.topology import ANY, ON_ERROR, ON_LIMIT

Exit = tuple[str, str]
"""(state, exit id), (`ANY`, id) for a global exit, or a route's key (see above)."""
ERROR_ROUTE = ON_ERROR
"""The key of a state's `on_error` route ("on error", as the topology writes it)."""
LIMIT_ROUTE = ON_LIMIT
"""What every `on_limit` route's key begins with ("on limit")."""
LIMIT_EXIT = "on_limit"
"""The exit id the runtime records for an `on_limit` move."""


def limit_key(guard: str) -> str:
    """The key of the route a guard takes: "on limit max_reflections"."""
    return f"{LIMIT_ROUTE} {guard}"


def own_limit(graph: Graph, name: str) -> str:
    """The key of state `name`'s own `on_limit`, named for the caps it routes: "on limit
    max_visits", "on limit max_turns", or "on limit max_visits or max_turns"."""
    state = graph.states[name]
    visits = state.max_visits is not None or name in graph.limits.max_visits
    turns = state.max_turns is not None
    guards = [g for g, on in (("max_visits", visits), ("max_turns", turns)) if on]
    return limit_key(" or ".join(guards or ["max_visits"]))


def is_route(exit_id: str) -> bool:
    """An `on_error` or `on_limit` route, not an exit the model or a `when:` takes."""
    return exit_id == ERROR_ROUTE or exit_id.startswith(f"{LIMIT_ROUTE} ")


def global_exits(graph: Graph) -> tuple[tuple[str, GlobalExit], ...]:
    """(id, exit) of each global exit of `graph`, in file order."""
    exits = graph.global_exits
    return tuple(zip(unique_ids(tuple(e.next_state for e in exits)), exits, strict=True))


def targets(graph: Graph) -> dict[Exit, str]:
    """Every exit and route the graph declares, with its target, in file order: the global
    exits, the `limits.on_limit` routes, then each state's exits, `on_error`, `on_limit`."""
    found: dict[Exit, str] = {(ANY, i): e.next_state for i, e in global_exits(graph)}
    found |= {(ANY, limit_key(g)): t for g, t in graph.limits.on_limit.items()}
    for name, state in graph.states.items():
        found |= {(name, o.id): o.target for o in exit_options(state)}
        on_error = state.on_error
        if on_error:
            found[name, ERROR_ROUTE] = on_error
        if state.on_limit:
            found[name, own_limit(graph, name)] = state.on_limit
    return found


def declared(graph: Graph) -> tuple[Exit, ...]:
    """The graph's exits and routes, in the order of `targets`."""
    return tuple(targets(graph))


def exits_taken(graph: Graph, transitions: Iterable[TransitionRecord]) -> set[Exit]:
    """The exits of `graph` these transitions took, keyed as `declared` keys them."""
    anywhere = {(e.next_state, e.shown): (ANY, i) for i, e in global_exits(graph)}
    found: set[Exit] = set()
    for t in transitions:
        own = _own(graph, t) or _route(graph, t)
        found.add(own or anywhere.get((t.to_state, t.description)) or (t.from_state, t.exit_id))
    return found


def _own(graph: Graph, t: TransitionRecord) -> Exit | None:
    """The source state's own exit with this target and these words (by its declared id:
    where a global exit shares its target, the runtime numbers the state's exit after it)."""
    state = graph.states.get(t.from_state)
    if state is None:
        return None
    same = [
        o.id
        for o in exit_options(state)
        if (o.target, o.description) == (t.to_state, t.description)
    ]
    if not same:
        return None
    return t.from_state, t.exit_id if t.exit_id in same else same[0]


def _route(graph: Graph, t: TransitionRecord) -> Exit | None:
    """The `on_error` or `on_limit` route of `graph` this transition took, if any (a route
    inside a sub-graph leads to a qualified name, which no root state has)."""
    if t.exit_id == ERROR_EXIT:
        state = graph.states.get(t.from_state)
        taken = state is not None and state.on_error == t.to_state
        return (t.from_state, ERROR_ROUTE) if taken else None
    if t.exit_id != LIMIT_EXIT:
        return None
    guard, capped = t.guard or "", t.capped
    state = graph.states.get(capped or "")
    if capped and state is not None and state.on_limit == t.to_state:
        return capped, own_limit(graph, capped)
    if graph.limits.on_limit.get(guard) == t.to_state:  # type: ignore[call-overload]
        return ANY, limit_key(guard)
    return None
