"""Checks of the flow keys: `when:` conditions, slots, global exits, cross-graph targets,
hand-offs.

`when` expressions are parsed, never run (`cgraph.spec.conditions`); names are checked
against variables, slots, results and the built-in template names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from cgraph.diagnostics import DataPath, Diagnostic
from cgraph.lint.structure import GraphContext, field_of
from cgraph.lint.templates import allowed_names, not_returned
from cgraph.spec import conditions, slots
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import did_you_mean, fix_for, parse_graph
from cgraph.spec.model import (
    CROSS,
    ActionState,
    AnyState,
    ExitCondition,
    Graph,
    GraphState,
    Slot,
    is_cross,
)
from cgraph.spec.read import read_file, read_text
from cgraph.spec.templating import BUILTIN_NAMES
from cgraph.spec.trust import GRAPH_FILE_HINT, graph_file_problem


def _exits(graph: Graph) -> Iterator[tuple[str | None, DataPath, ExitCondition]]:
    """(state or None for a global exit, path, exit) of every exit condition."""
    for index, exit_ in enumerate(graph.global_exits):
        yield None, ("global_exits", index), exit_
    for name, state in graph.states.items():
        for index, exit_ in enumerate(field_of(state, "exit_conditions") or ()):
            yield name, ("states", name, "exit_conditions", index), exit_


def check_conditions(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Every `when` parses and reads only names that exist."""
    allowed = allowed_names(ctx)
    for _, path, exit_ in _exits(ctx.graph):
        if exit_.when is None:
            continue
        error, used = conditions.parse(exit_.when)
        where = (*path, "when")
        if error is not None:
            yield ctx.diag(
                where,
                "when-syntax",
                f"`when: {exit_.when}` is not an expression: {error}",
                "write a Jinja expression without braces, e.g. `party_size > 12` or "
                "`not result.available`",
            )
            continue
        for name in sorted((used - allowed) & set(ctx.dropped_slots)):
            yield not_returned(ctx, where, name)
        for name in sorted(used - allowed - set(ctx.dropped_slots)):
            yield ctx.diag(
                where,
                "undefined-variable",
                f"`when` uses `{name}`, which is never defined",
                did_you_mean(name, sorted(allowed))
                + "declare it under `variables:` or `slots:`, or store a tool `result:` in it",
                fix=fix_for(name, sorted(allowed)),
            )


def check_branches(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Deterministic exits: an `else` is last, and a silent state always has a way out."""
    for index, exit_ in enumerate(ctx.graph.global_exits):
        if exit_.description is None and exit_.when is None:
            yield ctx.diag(
                ("global_exits", index),
                "exit-condition",
                f"global exit {index + 1} has neither `description` nor `when`: "
                "it would be taken in every state",
                "describe when it holds (`description:` with `examples:`), or add `when:`",
            )
    for name, state in ctx.graph.states.items():
        exits = field_of(state, "exit_conditions") or ()
        yield from _else_last(ctx, name, exits)
        deterministic = exits and all(e.description is None for e in exits)
        if deterministic and state.type != "action" and all(e.when for e in exits):
            yield ctx.diag(
                ("states", name, "exit_conditions"),
                "no-else",
                f"no exit of state `{name}` may hold: every exit has a `when` and none is "
                "the `else`, so the turn stops when none holds",
                "add a last exit with only `next_state:` (taken when no `when` holds)",
                warning=True,
                key=True,
            )


def _else_last(
    ctx: GraphContext, name: str, exits: tuple[ExitCondition, ...]
) -> Iterator[Diagnostic]:
    for index, exit_ in enumerate(exits[:-1]):
        if exit_.description is None and exit_.when is None and exit_.on_tool is None:
            yield ctx.diag(
                ("states", name, "exit_conditions", index),
                "unreachable-exit",
                f"exit {index + 1} of state `{name}` has no condition, so it is always "
                f"taken and {_later(index + 2, len(exits))}",
                "move the exit with only `next_state:` (the `else`) to the end",
                warning=True,
            )


def _later(first: int, last: int) -> str:
    return f"exit {first} never is" if first == last else f"exits {first}–{last} never are"


def check_slots(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Slots are consistently typed, named apart from variables, and collected by name."""
    graph = ctx.graph
    for name, slot in graph.slots.items():
        for message in _slot_problems(slot):
            yield ctx.diag(
                ("slots", name),
                "slot-type",
                f"slot `{name}`: {message}",
                "a slot is `type:` string, integer, number, boolean, array or object with "
                "the keywords that fit it: enum, minimum/maximum (numbers), pattern/format "
                "(text), items (array), properties and required (object)",
                key=True,
            )
        if name in graph.variables or name in BUILTIN_NAMES:
            other = "a variable" if name in graph.variables else "a built-in template name"
            yield ctx.diag(
                ("slots", name),
                "slot-conflict",
                f"slot `{name}` has the same name as {other}",
                "a slot is a variable with a type: declare it once, under `slots:`",
                key=True,
            )
    for state_name, state in graph.states.items():
        yield from _collected(ctx, state_name, field_of(state, "collect") or ())
        yield from _appended(ctx, state_name, state)
        if field_of(state, "ask_before_filling") and not field_of(state, "collect"):
            yield ctx.diag(
                ("states", state_name, "ask_before_filling"),
                "ask-without-collect",
                f"state `{state_name}` has `ask_before_filling` but collects no slots",
                "add `collect: [slot, ...]`, or remove `ask_before_filling`",
                warning=True,
                key=True,
            )


def _collected(ctx: GraphContext, state: str, names: tuple[str, ...]) -> Iterator[Diagnostic]:
    for index, slot in enumerate(names):
        if slot not in ctx.graph.slots:
            yield ctx.diag(
                ("states", state, "collect", index),
                "unknown-slot",
                f"state `{state}` collects `{slot}`, which is not a slot",
                did_you_mean(slot, sorted(ctx.graph.slots)) + "declare it under `slots:`",
                fix=fix_for(slot, sorted(ctx.graph.slots)),
            )


def _appended(ctx: GraphContext, name: str, state: AnyState) -> Iterator[Diagnostic]:
    collect = field_of(state, "collect") or ()
    for index, slot in enumerate(field_of(state, "append") or ()):
        declared = ctx.graph.slots.get(slot)
        if slot in collect and declared is not None and declared.type == "array":
            continue
        why = "is not an `array` slot" if slot in collect else "is not one it collects"
        yield ctx.diag(
            ("states", name, "append", index),
            "append-not-list",
            f"state `{name}` appends to `{slot}`, which {why}",
            "`append:` names `array` slots of the state's `collect:` (add it there, or "
            "make the slot `type: array` with `items:`)",
        )


def _slot_problems(slot: Slot) -> Iterator[str]:
    yield from _shape_problems(slot)
    if slot.items is not None:
        yield from (f"`items`: {message}" for message in _slot_problems(slot.items))
    for field, inner in slot.properties.items():
        yield from (f"property `{field}`: {message}" for message in _slot_problems(inner))
    yield from _scalar_problems(slot)


def _shape_problems(slot: Slot) -> Iterator[str]:
    """`items` on (and only on) a list, `properties` and `required` only on a record."""
    if slot.type == "array" and slot.items is None:
        yield "an `array` slot needs `items` (the type of each item)"
    if slot.type != "array" and slot.items is not None:
        yield f"`items` needs an `array` slot, not {slot.type}"
    if slot.type != "object" and (slot.properties or slot.required):
        yield f"`properties`/`required` need an `object` slot, not {slot.type}"
    if slot.type == "object" and not slot.properties:
        yield "an `object` slot needs `properties` (its fields)"
    for name in slot.required:
        if name not in slot.properties:
            yield f"`required` names `{name}`, which is not one of its `properties`"
    if slot.type in ("array", "object") and slot.enum:
        yield f"`enum` needs a plain slot, not {slot.type}: put it on the item or field"


def _scalar_problems(slot: Slot) -> Iterator[str]:
    numeric = slot.type in ("integer", "number")
    if not numeric and (slot.minimum is not None or slot.maximum is not None):
        yield f"`minimum`/`maximum` need a number slot, not {slot.type}"
    if slot.type != "string" and (slot.pattern is not None or slot.format is not None):
        yield f"`pattern`/`format` need a string slot, not {slot.type}"
    if slot.minimum is not None and slot.maximum is not None and slot.minimum > slot.maximum:
        yield f"`minimum` {slot.minimum} is above `maximum` {slot.maximum}"
    if slot.pattern is not None:
        try:
            re.compile(slot.pattern)
        except re.error as err:
            yield f"`pattern` is not a regular expression: {err}"
            return
    bare = Slot(type=slot.type)
    for value in slot.enum if slot.type not in ("array", "object") else ():
        found = slots.problem(bare, value)
        if found:
            yield f"enum value {found}"
    found = slots.problem(slot, slot.default)
    if found:
        yield f"`default` {found}"


def check_global_exits(ctx: GraphContext) -> Iterator[Diagnostic]:
    """`except:` names states of this graph."""
    names = list(ctx.graph.states)
    for index, exit_ in enumerate(ctx.graph.global_exits):
        for number, state in enumerate(exit_.except_):
            if state not in ctx.graph.states:
                yield ctx.diag(
                    ("global_exits", index, "except", number),
                    "unknown-state",
                    f"global exit {index + 1} is not offered in `{state}`, which is not a state",
                    did_you_mean(state, names) + "use a state id from `states:`",
                    fix=fix_for(state, names),
                )


def check_cross_graph(ctx: GraphContext) -> Iterator[Diagnostic]:
    """`file.yaml#state` targets and a graph state's `enter:` name states that exist."""
    graph = ctx.graph
    folder = Path(ctx.doc.file).parent
    located = [t for found in ctx.edges.values() for t in found]
    located += [(e.next_state, (*p, "next_state")) for s, p, e in _exits(graph) if s is None]
    located += [(t, ("limits", "on_limit", k)) for k, t in graph.limits.on_limit.items()]
    for target, path in located:
        if is_cross(target):
            file, _, wanted = target.partition(CROSS)
            yield from _foreign_state(ctx, folder, file, wanted, path)
    for name, state in graph.states.items():
        if isinstance(state, GraphState) and state.enter:
            where = ("states", name, "enter")
            yield from _foreign_state(ctx, folder, state.graph, state.enter, where)


def _foreign_state(
    ctx: GraphContext, folder: Path, file: str, state: str, path: DataPath
) -> Iterator[Diagnostic]:
    target = Path(os.path.normpath(folder / file))
    outside = graph_file_problem(target, ctx.root or folder, ctx.trust)
    if outside is not None:  # never read: `/etc/shadow#x`, `../outside.yaml#s`
        yield ctx.diag(
            path, "graph-outside", f"`{file}#{state}`: `{file}` {outside}", GRAPH_FILE_HINT
        )
        return
    sub = graph_at(str(target), ctx.texts, ctx.limits)
    if sub is None:
        yield ctx.diag(
            path,
            "unknown-graph-target",
            f"`{file}#{state}` names a state of `{file}`, which is not a readable, valid "
            "graph file",
            "the path is relative to this graph file; `cgraph lint` that file for its problems",
        )
    elif state not in sub.states:
        yield ctx.diag(
            path,
            "unknown-graph-target",
            f"`{file}#{state}`: `{file}` has no state `{state}`",
            did_you_mean(state, list(sub.states)) + f"use a state id from `{file}`",
            fix=fix_for(state, list(sub.states)),
        )


def graph_at(
    file: str, texts: Mapping[Path, str] | None = None, limits: ReadLimits | None = None
) -> Graph | None:
    """The graph in `file` (as `texts` holds it, if it does, else read within `limits`),
    or None if it is not one."""
    text = (texts or {}).get(Path(os.path.realpath(file)))
    if text is not None:
        graph, _ = parse_graph(read_text(text, file))
        return graph
    if not os.path.isfile(file):
        return None
    graph, _ = parse_graph(read_file(file, (limits or ReadLimits()).file_size))
    return graph


def check_asking_rules(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A deterministic exit reading `clarifications` is taken only on a step about to ask
    once more: in a state that never asks, it is never taken."""
    graph = ctx.graph
    for owner, path, exit_ in _exits(graph):
        when = exit_.when
        if owner is None or exit_.description is not None or when is None:
            continue
        state = graph.states[owner]
        if not conditions.reads_clarifications(when) or (
            isinstance(state, ActionState) and graph.clarify_of(state) is not False
        ):
            continue
        why = "`clarify: false`" if isinstance(state, ActionState) else f"type {state.type}"
        yield ctx.diag(
            (*path, "when"),
            "clarifications-unasked",
            f"`when: {when}` is never taken: it is evaluated only when `{owner}` is about to "
            f"ask a clarifying question, which it never does ({why})",
            (
                "let the state ask (`clarify: true`, or a question)"
                if isinstance(state, ActionState)
                else "only an action state asks: put the rule on the state that asks"
            )
            + ", or write a condition on something else",
            warning=True,
        )


def check_handoffs(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A `handoff: true` exit leads to an action state of its own graph: only a state
    that talks reads the message it hands on."""
    states = ctx.graph.states
    for owner, path, exit_ in _exits(ctx.graph):
        target = exit_.next_state
        if not exit_.handoff or (target in states and states[target].type == "action"):
            continue
        kind = f" (type {states[target].type})" if target in states else ""
        where = f"an exit of state `{owner}`" if owner is not None else "a global exit"
        yield ctx.diag(
            (*path, "handoff"),
            "handoff-target",
            f"{where} hands the message on to `{target}`{kind}: only an action state reads "
            "a message handed to it",
            "hand it to an action state of this graph (a hub, or the desk that answers it), "
            "or remove `handoff: true`",
        )


def check_acts(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A dialogue act without examples lends an exit nothing."""
    for name, act in ctx.graph.acts.items():
        if not act.examples:
            yield ctx.diag(
                ("acts", name),
                "act-no-examples",
                f"dialogue act `{name}` has no `examples`: no exit is matched on it",
                "add `examples:` with a few ways users say it",
                warning=True,
                key=True,
            )


FLOW_CHECKS = (
    check_conditions,
    check_branches,
    check_slots,
    check_global_exits,
    check_cross_graph,
    check_asking_rules,
    check_handoffs,
    check_acts,
)


def check_flows(ctx: GraphContext) -> list[Diagnostic]:
    return [d for check in FLOW_CHECKS for d in check(ctx)]
