"""Checks that matter only when a graph runs without a language model (the semantic mode).

Offline, an action state's reply is its authored text: its `say:`, else its actions joined
("Greet the customer. Ask what happened.") — instructions for an LLM, shown to the user as
a stage direction. `cgraph run` in the semantic mode adds these checks to lint's own.
"""

from __future__ import annotations

from collections.abc import Iterator

from cgraph.diagnostics import Diagnostic
from cgraph.lint.structure import GraphContext, field_of


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
