"""Which declared exit a recorded transition took: a state's own, or one of the graph's
global exits.

A state's exit is keyed (state, exit id) as the runtime names it (`cgraph.runtime.exits`).
A global exit holds in every state but is one exit of the graph, so it is keyed once,
(`ANY`, its id) — the topology's name for "from every state" — whichever state it was
taken from (a state of a sub-graph included: a sub-graph inherits its parents' global
exits). Its id is its target, numbered where two global exits share one.

A transition records its source, target, exit id and the exit's description; the runtime
numbers a state's exits together with the global exits offered there, so a global exit is
recognised by its target and description, not by its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from cgraph.runtime.exits import exit_options, unique_ids
from cgraph.runtime.records import TransitionRecord
from cgraph.spec.model import GlobalExit, Graph
from cgraph.spec.topology import ANY

Exit = tuple[str, str]
"""(state, exit id), or (`ANY`, id) for a global exit."""


def global_exits(graph: Graph) -> tuple[tuple[str, GlobalExit], ...]:
    """(id, exit) of each global exit of `graph`, in file order."""
    exits = graph.global_exits
    return tuple(zip(unique_ids(tuple(e.next_state for e in exits)), exits, strict=True))


def state_exits(graph: Graph) -> Iterator[Exit]:
    """Every (state, exit id) the states declare, in file order."""
    for name, state in graph.states.items():
        for option in exit_options(state):
            yield name, option.id


def declared(graph: Graph) -> tuple[Exit, ...]:
    """The graph's exits: its global exits first, then every state's, in file order."""
    return (*((ANY, i) for i, _ in global_exits(graph)), *state_exits(graph))


def exits_taken(graph: Graph, transitions: Iterable[TransitionRecord]) -> set[Exit]:
    """The exits of `graph` these transitions took, keyed as `declared` keys them."""
    anywhere = {(e.next_state, e.label): (ANY, i) for i, e in global_exits(graph)}
    found: set[Exit] = set()
    for t in transitions:
        own = _own(graph, t)
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
