"""Exit ids and the transition guard.

An exit's id is its target state's id (`END` for the terminal), so the model and the
audit log both read meaningful names; two exits of one state with the same target become
`target`, `target_2`, … in declaration order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cgraph.errors import TransitionError
from cgraph.runtime.ports import ExitOption
from cgraph.runtime.routes.failures import rendered
from cgraph.spec import conditions
from cgraph.spec.model import (
    AnyState,
    ExitCondition,
    GlobalExit,
    Graph,
    SideEffectState,
    StartEntry,
    anywhere_targets,
    exits_of,
    is_cross,
    targets_of,
)
from cgraph.spec.names import END, RESUME

ON_ERROR = "on_error"


def unique_ids(targets: tuple[str, ...]) -> tuple[str, ...]:
    """`a, b, a` → `a, b, a_2`: the target id, numbered only where it repeats."""
    seen: dict[str, int] = {}
    ids = []
    for target in targets:
        seen[target] = seen.get(target, 0) + 1
        ids.append(target if seen[target] == 1 else f"{target}_{seen[target]}")
    return tuple(ids)


@dataclass(frozen=True, slots=True)
class StateExits:
    """What a step reads of a state's exits, built once per state (states are frozen)."""

    exits: tuple[ExitCondition, ...]
    options: tuple[ExitOption, ...]
    """Every exit as the model sees it, ids unique over them all."""
    described: tuple[ExitOption, ...]
    """The described exits only, ids unique over them: an action's options when no
    `when:` and no global exit applies."""
    conditional: bool
    """Some exit has a `when:` (its options depend on the variables)."""
    targets: tuple[str, ...]
    """Every state the state may lead to (`targets_of`): what the transition guard allows."""


# Keyed by identity: states are immutable but not all hashable (`set:` is a dict). The
# state is kept in the value so its id cannot be reused while cached; the cache is
# bounded, so a long-lived process that loads many graphs does not keep them all alive.
_OPTIONS: dict[int, tuple[AnyState, StateExits]] = {}
OPTIONS_CACHE_SIZE = 2048


def state_exits(state: AnyState) -> StateExits:
    cached = _OPTIONS.get(id(state))
    if cached is not None and cached[0] is state:
        return cached[1]
    exits = exits_of(state)
    described = tuple(e for e in exits if e.description)
    found = StateExits(
        exits=exits,
        options=_options(exits),
        described=_options(described),
        conditional=any(e.when is not None or e.on_tool is not None for e in exits),
        targets=targets_of(state),
    )
    if len(_OPTIONS) >= OPTIONS_CACHE_SIZE:
        _OPTIONS.clear()
    _OPTIONS[id(state)] = (state, found)
    return found


def _options(exits: tuple[ExitCondition, ...]) -> tuple[ExitOption, ...]:
    ids = unique_ids(tuple(e.next_state for e in exits))
    return tuple(_option(i, e) for i, e in zip(ids, exits, strict=True))


def _option(exit_id: str, condition: ExitCondition, anywhere: bool = False) -> ExitOption:
    return ExitOption(
        id=exit_id,
        description=condition.shown,
        label=condition.label or "",
        target=condition.next_state,
        examples=condition.examples,
        anywhere=anywhere,
        irreversible=condition.next_state == END or is_cross(condition.next_state),
        confirm=condition.confirm,
        early=anywhere or bool(condition.early),
        resume=condition.resume,
        drop=condition.drop,
        handoff=condition.handoff,
    )


def with_costs(graph: Graph, options: tuple[ExitOption, ...]) -> tuple[ExitOption, ...]:
    """`options` with an exit into a side-effect state of `graph` marked irreversible (an
    exit to END or out of the flow already is): its effect is done before the user speaks."""
    if not any(_into_side_effect(graph, o) for o in options):
        return options
    return tuple(
        replace(o, irreversible=True) if _into_side_effect(graph, o) else o for o in options
    )


def _into_side_effect(graph: Graph, option: ExitOption) -> bool:
    target = graph.states.get(option.target) if not option.anywhere else None
    return not option.irreversible and isinstance(target, SideEffectState)


def exit_options(state: AnyState) -> tuple[ExitOption, ...]:
    """The exits of a state as the model sees them (`on_error` is not the model's to take)."""
    return state_exits(state).options


def start_options(entries: tuple[StartEntry, ...]) -> tuple[ExitOption, ...]:
    """Conditional start entries as exits: the id is the entry's state id, `when` its text."""
    ids = unique_ids(tuple(e.state for e in entries))
    return tuple(
        ExitOption(id=i, description=e.when, target=e.state)
        for i, e in zip(ids, entries, strict=True)
    )


def check_transition(graph: Graph, source: str, target: str) -> None:
    """Raise `TransitionError` unless `graph` declares `source → target`.

    The engine validates every answer before it gets here; this guard is the last line, so
    that no code path (a model, a bug, a hand-edited snapshot) can apply an undeclared move.
    """
    state = graph.states.get(source)
    if state is None:
        raise TransitionError(f"`{source}` is not a state of graph `{graph.name}`")
    targets = state_exits(state).targets
    if target not in targets:
        allowed = ", ".join(targets) or "none"
        raise TransitionError(
            f"`{source}` → `{target}` is not declared in graph `{graph.name}` "
            f"(its exits lead to {allowed})"
        )
    if target not in (END, RESUME) and not is_cross(target) and target not in graph.states:
        raise TransitionError(f"`{target}` is not a state of graph `{graph.name}`")


def check_anywhere(graph: Graph, target: str) -> None:
    """Raise `TransitionError` unless a global exit or `on_limit` of `graph` leads there."""
    if target not in anywhere_targets(graph):
        raise TransitionError(
            f"no global exit or `on_limit` of graph `{graph.name}` leads to `{target}`"
        )


def check_start(graph: Graph, target: str, entry: str | None = None) -> None:
    """Raise `TransitionError` unless `target` is one of the graph's start states, or
    `entry`: the state the `graph` state entering it names under `enter:`."""
    if target not in graph.states or target not in (*graph.start_states(), entry):
        raise TransitionError(f"`{target}` is not a start state of graph `{graph.name}`")


def holds(
    exit_: ExitCondition, context: Mapping[str, Any], called: frozenset[str] = frozenset()
) -> bool:
    """Whether the exit's conditions hold: its `when:` in `context`, and its `on_tool:`
    among the tools the model `called` (successfully, this turn, here)."""
    if exit_.on_tool is not None and exit_.on_tool not in called:
        return False
    when = exit_.when
    here = str(context.get("state", ""))
    return when is None or rendered(here, "when", lambda: conditions.holds(when, context))


def is_deterministic(exit_: ExitCondition) -> bool:
    """No description: taken by the engine when its `when` holds (always, for an `else`)."""
    return exit_.description is None


def on_asking(exit_: ExitCondition) -> bool:
    """Whether the exit's `when:` reads `clarifications`: a rule about asking once more
    ("after two questions, hand off"), evaluated only on a step about to ask, so the
    answer to the last question allowed is still taken as an answer."""
    return exit_.when is not None and conditions.reads_clarifications(exit_.when)


def first_holding(
    exits: Sequence[ExitCondition],
    context: Mapping[str, Any],
    called: frozenset[str] = frozenset(),
    *,
    early: bool = False,
) -> tuple[int, ExitCondition] | None:
    """The first deterministic exit that holds, with its index among `exits` (never one
    `on_asking`: no step that calls this is about to ask); `early`: only those that say
    `early: true` (a collecting state's slots are not all filled yet)."""
    for index, exit_ in enumerate(exits):
        if early and not exit_.early:
            continue
        if is_deterministic(exit_) and not on_asking(exit_) and holds(exit_, context, called):
            return index, exit_
    return None


def first_rule(
    exits: Sequence[ExitCondition],
    context: Mapping[str, Any],
    unknown: Sequence[str],
    *,
    asking: bool = False,
) -> tuple[int, ExitCondition] | None:
    """The first deterministic `when:` exit that holds and reads none of `unknown` (slots
    still to be collected), with its index: never the else, nor an `on_tool:` exit, and
    one `on_asking` only when the step is `asking` a clarifying question."""
    for index, exit_ in enumerate(exits):
        when = exit_.when
        if not is_deterministic(exit_) or when is None or exit_.on_tool is not None:
            continue
        if on_asking(exit_) and not asking:
            continue
        if not conditions.parse(when)[1].intersection(unknown) and holds(exit_, context):
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
        _option(i, e, anywhere=n < len(offered))
        for n, (i, e) in enumerate(zip(ids, exits, strict=True))
    )
    owners = {options[n].id: key for n, (key, _) in enumerate(offered)}
    return options, owners
