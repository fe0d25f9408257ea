"""Slots at run time: their defaults, the schemas an answer may fill, the values checked,
and where they live: the root graph's in the session's variables, for the whole session;
a sub-graph's in its frame, only while it runs (`returns:` copies some back to the
caller when it ends). Pure functions of the graph and the session's state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cgraph.errors import SlotValueError
from cgraph.runtime.routes.graphs import Graphs, location
from cgraph.runtime.state.snapshot import SessionState
from cgraph.spec import slots
from cgraph.spec.model import ActionState, AnyState, Graph, Tool


def slot_defaults(graph: Graph) -> dict[str, Any]:
    """Slots start as their `default` (None: unset)."""
    return {name: slot.default for name, slot in graph.slots.items()}


def slot_schemas(graph: Graph, state: AnyState) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the slots an answer here may fill, as nullable schemas; the ones this state asks).

    Every slot of the graph may be filled from any message, so "Table for 4 at 7 pm" said
    up front fills two steps at once and a later message can correct a value.
    """
    if not isinstance(state, ActionState) or not graph.slots:
        return {}, ()
    schemas = {name: slots.answer_schema(slot) for name, slot in graph.slots.items()}
    return schemas, state.collect


def set_slots(
    graph: Graph,
    state_id: str,
    values: Mapping[str, Any],
    *,
    declared: Graph | None = None,
    field: str = "set",
) -> dict[str, Any]:
    """A `set:`'s values (or `field`'s: a `graph` state's `with:`, for the slots of the
    graph `declared` it enters) with each slot's value as the slot keeps it (`25.0` → 25
    on an integer slot); `SlotValueError`, located at its entry in `graph`, for a value
    the slot's schema refuses. Names that are not slots are plain variables."""
    kept = dict(values)
    owner = declared or graph
    for name, value in values.items():
        slot = owner.slots.get(name)
        if slot is None:
            continue
        kept[name] = slots.normalised(slot, value)
        why = slots.problem(slot, kept[name])
        if why is not None:
            where = location(graph, ("states", state_id, field, name))
            raise SlotValueError(
                f"{where}: `{field}` of state `{state_id}`: slot `{name}`: {why}", name
            )
    return kept


def unfilled(names: Sequence[str], variables: Mapping[str, Any]) -> tuple[str, ...]:
    """The slots of `names` still unset (null, or a list with nothing in it yet)."""
    return tuple(n for n in names if variables.get(n) is None or variables.get(n) == [])


def appended(
    names: Sequence[str], found: Mapping[str, Any], variables: Mapping[str, Any]
) -> dict[str, Any]:
    """`found` with each list of `names` (a state's `append:`) added to the list the slot
    holds, an item it holds already not added twice."""
    kept = dict(found)
    for name in names:
        new = found.get(name)
        if isinstance(new, list):
            old = list(variables.get(name) or ())
            kept[name] = old + [item for item in new if item not in old]
    return kept


def slot_changes(
    found: Mapping[str, Any], variables: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(new values, corrections: slots that had another value, with the old one)."""
    new = {k: v for k, v in found.items() if variables.get(k) != v}
    corrected = {k: variables[k] for k in new if variables.get(k) is not None}
    return new, corrected


def frame_defaults(graph: Graph) -> dict[str, Any]:
    """A sub-graph's slots as it starts, each time it is entered: their defaults."""
    return {name: slot.default for name, slot in graph.slots.items()}


def routed(state: SessionState, graphs: Graphs, values: Mapping[str, Any]) -> SessionState:
    """`values` set where they live: a slot of a sub-graph running now in its frame (the
    innermost that declares it), anything else in the session's variables."""
    stack, rest = list(state.stack), {}
    for name, value in values.items():
        for index in range(len(stack) - 1, -1, -1):
            frame = stack[index]
            if frame.graph and name in graphs.get(frame.graph).slots:
                stack[index] = frame._replace(slots={**frame.slots, name: value})
                break
        else:
            rest[name] = value
    variables = {**state.variables, **rest} if rest else state.variables
    return state._replace(stack=tuple(stack), variables=variables)


def cleared(state: SessionState, graphs: Graphs, names: Sequence[str]) -> SessionState:
    """`reset:` slots back to their defaults, where they live."""
    if not names:
        return state
    graph = graphs.get(state.frame.graph)
    declared = {**graphs.root.slots, **graph.slots}
    return routed(state, graphs, {n: declared[n].default for n in names if n in declared})


def tool_values(graph: Graph, tool: Tool, result: Any, *, by_model: bool) -> dict[str, Any]:
    """What a tool's result sets: its `result:` variable (for a call by the model; a
    side-effect state names its own) and each of its `sets:` keys the result holds, as
    their slots keep them; `SlotValueError`, located at the tool's key, for a value its
    slot refuses (the declaration and the handler disagree: the designer is told)."""
    values: dict[str, Any] = {}
    if by_model and tool.result:
        values[tool.result] = result
    if tool.sets and isinstance(result, Mapping):
        values.update({name: result[name] for name in tool.sets if name in result})
    index = next(n for n, t in enumerate(graph.tools) if t.name == tool.name)
    for name, value in list(values.items()):
        slot = graph.slots.get(name)
        if slot is None:
            continue
        values[name] = slots.normalised(slot, value)
        why = slots.problem(slot, values[name])
        if why is not None:
            key = "result" if name == tool.result and by_model else "sets"
            where = location(graph, ("tools", index, key))
            raise SlotValueError(f"{where}: tool `{tool.name}`: slot `{name}`: {why}", name)
    return values
