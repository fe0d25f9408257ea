"""Drift test: lint's list of keys that are never templates follows the model's fields.

Every key a state, an exit or the agent can hold is either rendered (listed here, each
checked by the runtime) or in `NOT_TEMPLATES`; a new field fails this test until someone
decides which it is, so lint can neither skip a template nor parse an id as one.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

from cgraph.lint.templates import NOT_TEMPLATES
from cgraph.lint.walk import lint_file
from cgraph.spec import model as m

# Keys whose text a session renders as a template (or shows the model, with names).
RENDERED = frozenset(
    {
        "objective",
        "fallback",
        "say",
        "actions",
        "intra_state_navigation_guidelines",
        "action_guidelines",
        "boundary_constraints",
        "decision_guidelines",
        "reflection_guidelines",
        "queries",
        "set",
        "arguments",
        "description",
        "name",
        "persona",
        "directives",
        "exit_conditions",
        "with",
        "clarify",
    }
)
# Keys that hold no text at all: a switch, a number or a fixed word.
NOT_TEXT = frozenset({"ask_before_filling", "context", "tools", "early", "resume", "confirm"})
STATES = typing.get_args(typing.get_args(m.State)[0])  # State is Annotated[A | B | ..., ...]
WALKED = (m.Agent, m.ExitCondition, *STATES)


def keys(cls: type) -> set[str]:
    return {m.key_of(f) for f in dataclasses.fields(cls) if not f.metadata.get("internal")}


def test_every_field_lint_walks_is_either_rendered_or_never_a_template() -> None:
    walked = set().union(*(keys(cls) for cls in WALKED))
    unclassified = walked - RENDERED - NOT_TEMPLATES - NOT_TEXT
    assert not unclassified, f"classify these keys in NOT_TEMPLATES or as rendered: {unclassified}"
    assert not RENDERED & NOT_TEMPLATES


def test_not_templates_names_only_fields_of_the_model() -> None:
    every = set().union(*(keys(cls) for cls in WALKED), keys(m.GlobalExit))
    assert not NOT_TEMPLATES - every, NOT_TEMPLATES - every


def test_a_variable_named_like_a_field_is_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "cgraph: 1\nname: g\nstart: a\nstates:\n  a:\n    type: annotation\n"
        "    objective: Tag.\n    set: {type: '{{ nope }}', tool: '{{ x'}\n"
        "    next_state: END\n",
        encoding="utf-8",
    )
    messages = [d.message for d in lint_file(path)]
    assert any("nope" in message for message in messages), messages
    assert any("unexpected end" in message or "x" in message for message in messages)
