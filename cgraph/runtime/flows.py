"""The flow keys at run time: slots asked for, `when` exits, global exits, `on_limit`.

Pure functions of the graph and the session's variables; handlers and the engine call
them. A `when` is evaluated in the sandbox (`cgraph.spec.conditions.holds`); one that
fails for want of a value (a slot still unset) does not hold, one that fails otherwise
fails the step (`StepRenderFailed`, field `when`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cgraph.backends.llm.types import ExitOption
from cgraph.errors import SlotValueError
from cgraph.runtime.exits import unique_ids
from cgraph.runtime.graphs import location
from cgraph.runtime.render_failures import rendered
from cgraph.spec import conditions, slots
from cgraph.spec.model import ActionState, AnyState, ExitCondition, GlobalExit, Graph


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


def holds(exit_: ExitCondition, context: Mapping[str, Any]) -> bool:
    when = exit_.when
    here = str(context.get("state", ""))
    return when is None or rendered(here, "when", lambda: conditions.holds(when, context))


def is_deterministic(exit_: ExitCondition) -> bool:
    """No description: taken by the engine when its `when` holds (always, for an `else`)."""
    return exit_.description is None


def first_holding(
    exits: Sequence[ExitCondition], context: Mapping[str, Any]
) -> tuple[int, ExitCondition] | None:
    """The first deterministic exit that holds, with its index among `exits`."""
    for index, exit_ in enumerate(exits):
        if is_deterministic(exit_) and holds(exit_, context):
            return index, exit_
    return None


def global_exits(
    frames: Sequence[tuple[str, Graph, str]], context: Mapping[str, Any]
) -> Iterator[tuple[str, GlobalExit]]:
    """(owning graph key, exit) of the global exits offered here, the innermost graph's
    first: a sub-graph inherits its parents'. `frames` are (graph key, graph, its current
    state), root first; `except:` names a state of the graph that declares the exit (a
    `graph` state there excepts every state inside it)."""
    for key, graph, state_id in reversed(frames):
        for exit_ in graph.global_exits:
            if state_id not in exit_.except_ and holds(exit_, context):
                yield key, exit_


def options_with_globals(
    offered: Sequence[tuple[str, GlobalExit]], own: Sequence[ExitCondition]
) -> tuple[tuple[ExitOption, ...], dict[str, str]]:
    """Global exits first (marked), then the state's described exits; ids unique over both.

    Returns the options and, for each global option id, the key of the graph declaring it.
    """
    exits: list[ExitCondition] = [e for _, e in offered] + list(own)
    ids = unique_ids(tuple(e.next_state for e in exits))
    options = tuple(
        ExitOption(
            id=i,
            description=e.label,
            target=e.next_state,
            examples=e.examples,
            anywhere=n < len(offered),
        )
        for n, (i, e) in enumerate(zip(ids, exits, strict=True))
    )
    owners = {options[n].id: key for n, (key, _) in enumerate(offered)}
    return options, owners
