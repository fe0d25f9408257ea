"""Checks that matter only when a graph runs without a language model (the semantic mode).

Offline, an action state's reply is its authored text: its `say:`, else its actions joined
("Greet the customer. Ask what happened.") — instructions for an LLM, shown to the user as
a stage direction. A free-text slot is never filled offline, so a state that collects one
asks for it on every turn. `cgraph run` in the semantic mode adds these checks to lint's own.
"""

from __future__ import annotations

from collections.abc import Iterator

from cgraph.diagnostics import Diagnostic
from cgraph.lint.structure import GraphContext, field_of
from cgraph.spec.slots import never_filled

OFFLINE_CODES = frozenset({"no-say", "offline-slot"})
"""The codes of the checks below: hints for runs without an LLM, not lint findings."""


def check_say(ctx: GraphContext) -> Iterator[Diagnostic]:
    """An action state with actions but no `say:` has no words of its own offline."""
    for name, state in ctx.graph.states.items():
        if state.type != "action" or field_of(state, "say") or not field_of(state, "actions"):
            continue
        yield ctx.diag(
            ("states", name),
            "no-say",
            f"action state `{name}` has no `say:`; without an LLM its actions are shown "
            "as a stage direction",
            "add `say:` with what the agent says here, for runs and tests without an LLM",
            warning=True,
            key=True,
        )


def check_offline_slots(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A state that collects a free-text slot waits for it forever without an LLM."""
    for name, state in ctx.graph.states.items():
        for index, slot in enumerate(field_of(state, "collect") or ()):
            if slot in ctx.graph.slots and never_filled(ctx.graph.slots[slot]):
                yield ctx.diag(
                    ("states", name, "collect", index),
                    "offline-slot",
                    f"state `{name}` collects `{slot}`, a free-text slot that is never filled "
                    "without an LLM: offline it asks for it again on every turn",
                    f"give `{slot}` an `enum` or a `pattern`, or set it in a test's "
                    "`start: {variables: …}`",
                    warning=True,
                )


OFFLINE_CHECKS = (check_say, check_offline_slots)
