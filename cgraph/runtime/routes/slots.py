"""The flow keys at run time: slots asked for, `when` exits, global exits, `on_limit`.

Pure functions of the graph and the session's variables; handlers and the engine call
them. A `when` is evaluated in the sandbox (`cgraph.spec.conditions.holds`); one that
fails for want of a value (a slot still unset) does not hold, one that fails otherwise
fails the step (`StepRenderFailed`, field `when`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cgraph.errors import SlotValueError
from cgraph.runtime.routes.graphs import location
from cgraph.spec import slots
from cgraph.spec.model import ActionState, AnyState, Graph


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


def set_slots(graph: Graph, state_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """A `set:`'s values with each slot's value as the slot keeps it (`25.0` → 25 on an
    integer slot); `SlotValueError`, located at its `set:` entry, for a value the slot's
    schema refuses. Names that are not slots are plain variables: any value goes."""
    kept = dict(values)
    for name, value in values.items():
        slot = graph.slots.get(name)
        if slot is None:
            continue
        kept[name] = slots.normalised(slot, value)
        why = slots.problem(slot, kept[name])
        if why is not None:
            where = location(graph, ("states", state_id, "set", name))
            raise SlotValueError(
                f"{where}: `set` of state `{state_id}`: slot `{name}`: {why}", name
            )
    return kept


def unfilled(names: Sequence[str], variables: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(n for n in names if variables.get(n) is None)


def slot_changes(
    found: Mapping[str, Any], variables: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(new values, corrections: slots that had another value, with the old one)."""
    new = {k: v for k, v in found.items() if variables.get(k) != v}
    corrected = {k: variables[k] for k in new if variables.get(k) is not None}
    return new, corrected
