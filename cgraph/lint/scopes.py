"""Checks of slots that belong to their graph, and of interruptions that come back.

`reset:` and `returns:` name slots of this graph; a `graph` state's `with:` names slots of
the sub-graph it enters. A state that collects slots keeps the user until they are filled,
but for exits marked `early: true`: an exit that says neither, which an older graph could
take before the slots were filled, is worth a look (a warning). `RESUME` ends an
interruption, so a path to it must start at a `resume: true` exit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from cgraph.diagnostics import DataPath, Diagnostic
from cgraph.lint.flows import graph_at
from cgraph.lint.structure import GraphContext, field_of
from cgraph.lint.unset import filled_on_entry
from cgraph.spec.load import did_you_mean, fix_for
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import RESUME


def _unknown_slot(
    ctx: GraphContext, path: DataPath, name: str, graph: Graph, what: str
) -> Diagnostic:
    return ctx.diag(
        path,
        "unknown-slot",
        f"{what} names `{name}`, which is not a slot of graph `{graph.name}`",
        did_you_mean(name, sorted(graph.slots)) + f"declare it under `slots:` of `{graph.name}`",
        fix=fix_for(name, sorted(graph.slots)),
    )


def check_named_slots(ctx: GraphContext) -> Iterator[Diagnostic]:
    """`reset:` and `returns:` name this graph's slots."""
    graph = ctx.graph
    for index, name in enumerate(graph.returns):
        if name not in graph.slots:
            yield _unknown_slot(ctx, ("returns", index), name, graph, "`returns`")
    for state_name, state in graph.states.items():
        for index, name in enumerate(field_of(state, "reset") or ()):
            if name not in graph.slots:
                where = ("states", state_name, "reset", index)
                yield _unknown_slot(ctx, where, name, graph, f"`reset` of state `{state_name}`")


def check_passed_slots(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A `graph` state's `with:` names slots of the sub-graph it enters."""
    folder = Path(ctx.doc.file).parent
    for state_name, state in ctx.graph.states.items():
        if not isinstance(state, GraphState) or not state.with_:
            continue
        sub = graph_at(os.path.normpath(folder / state.graph), ctx.texts, ctx.limits)
        if sub is None:
            continue  # a missing or broken sub-graph is reported where it is named
        for name in state.with_:
            if name not in sub.slots:
                where = ("states", state_name, "with", name)
                what = f"`with` of state `{state_name}`"
                yield _unknown_slot(ctx, where, name, sub, what)


def check_early_exits(ctx: GraphContext) -> Iterator[Diagnostic]:
    """An exit of a collecting state that says nothing about `early`: it now waits for
    the slots, where a graph written before could take it as soon as the model chose it.
    A slot with a default is never missing, nor one every path from the start has filled
    on entering the state, so an exit waits only for the others; and an exit whose
    description says they are given ("The user gave the party size.") means to wait."""
    graph = ctx.graph
    missing = frozenset(n for n in graph.slots if _may_be_missing(graph, n))
    filled = filled_on_entry(graph, missing) if missing else {}
    for state_name, state in graph.states.items():
        ready = filled.get(state_name, frozenset())
        collect = [s for s in field_of(state, "collect") or () if s in missing - ready]
        if not collect:
            continue
        slots = ", ".join(f"`{s}`" for s in collect)
        for index, exit_ in enumerate(field_of(state, "exit_conditions") or ()):
            if exit_.description is None or exit_.early is not None:
                continue
            if says_given(exit_.description, collect):
                continue
            yield ctx.diag(
                ("states", state_name, "exit_conditions", index),
                "exit-waits-for-slots",
                f"exit to `{exit_.next_state}` of state `{state_name}` is taken only once "
                f"{slots} {'is' if len(collect) == 1 else 'are'} filled",
                "if it may leave before (cancel, not now, a hand-off), add `early: true`; "
                "if it should wait, add `early: false`",
                warning=True,
            )


def _may_be_missing(graph: Graph, name: str) -> bool:
    slot = graph.slots.get(name)
    return slot is None or slot.default is None


# "The user has given the amount", "… provides their party size": words of giving, and of
# refusing or lacking, which turn the sentence round ("has no card", "won't give it").
_GIVES = re.compile(
    r"\b(give|gives|gave|given|giving|provide[sd]?|providing|tell|tells|told|state[sd]?|"
    r"share[sd]?|enter(?:s|ed)?|suppl(?:y|ies|ied)|answer(?:s|ed)?|say|says|said)\b"
)
_NOT = re.compile(r"\b(not|no|never|none|without|refuses?|declines?|cannot)\b|n't\b")


def says_given(description: str, collect: list[str]) -> bool:
    """Whether an exit's description says the user gives every slot in `collect`: it
    names a way of giving, no negation, and each slot by its name (`party_size` as
    "party size", or its first word)."""
    text = description.lower()
    if not _GIVES.search(text) or _NOT.search(text):
        return False
    return all(_names(text, slot) for slot in collect)


def _names(text: str, slot: str) -> bool:
    words = slot.lower().split("_")
    return any(re.search(rf"\b{re.escape(w)}\b", text) for w in (" ".join(words), words[0]))


def check_resume(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Every `RESUME` lies on a path that a `resume: true` exit starts."""
    graph = ctx.graph
    starts = [e.next_state for e in graph.global_exits if e.resume]
    for state in graph.states.values():
        starts += [e.next_state for e in field_of(state, "exit_conditions") or () if e.resume]
    interrupted: set[str] = set()
    queue = [s for s in starts if s in graph.states]
    while queue:
        name = queue.pop()
        if name in interrupted:
            continue
        interrupted.add(name)
        queue += [t for t, _ in ctx.edges.get(name, ()) if t in graph.states]
    for index, exit_ in enumerate(graph.global_exits):
        if exit_.next_state == RESUME and not exit_.resume:
            yield _resume_unreachable(ctx, ("global_exits", index, "next_state"), "a global exit")
    for name, found in ctx.edges.items():
        for target, path in found:
            if target == RESUME and name not in interrupted:
                yield _resume_unreachable(ctx, path, f"state `{name}`")


def _resume_unreachable(ctx: GraphContext, path: DataPath, where: str) -> Diagnostic:
    return ctx.diag(
        path,
        "resume-unreachable",
        f"{where} leads to `RESUME`, which no interruption reaches: no `resume: true` exit "
        "starts a path through it",
        "mark the exit that starts this detour `resume: true`, or lead to a state or `END`",
    )


SCOPE_CHECKS = (check_named_slots, check_passed_slots, check_early_exits, check_resume)


def check_scopes(ctx: GraphContext) -> list[Diagnostic]:
    return [d for check in SCOPE_CHECKS for d in check(ctx)]
