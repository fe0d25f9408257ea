"""Template checks: every syntax error found in every templated field, and no template
code run while looking (lint may be given an untrusted branch)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from cgraph.lint.templates import analyse, skeleton
from cgraph.lint.walk import lint_file

UNCLOSED = ["{{ x }", "{{ x", "{# x", "{% if x", "{{ x }} and {{ y"]
# Where a template can stand: each field's line in a clean graph, `{t}` for its text.
FIELDS = {
    "persona": "  persona: {t}",
    "directives": "  directives: [{t}]",
    "fallback": "fallback: {t}",
    "objective": "    objective: {t}",
    "actions": "    actions: [{t}]",
    "guidelines": "    action_guidelines: [{t}]",
    "say": "    say: {t}",
    "exit description": "        description: {t}",
    "set": "    set: {{v: {t}}}",
    "queries": "    queries: [{t}]",
    "prompt": "prompts: {{action: {t}}}",
}
GRAPH = """\
cgraph: 1
name: t
{fallback}
{prompt}
agent:
  name: Sam
{persona}
{directives}
start: tag
variables: {{v: 1, x: 1, y: 1}}
states:
  tag:
    type: annotation
    objective: Tag.
{set}
    next_state: recall
  recall:
    type: recall
    objective: Recall.
{queries}
    next_state: ask
  ask:
    type: action
{objective}
{actions}
{guidelines}
{say}
    intra_state_navigation_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - next_state: END
{exit description}
"""


def graph(field: str, template: str) -> str:
    lines = {name: line.format(t="plain") for name, line in FIELDS.items()}
    lines[field] = FIELDS[field].format(t='"' + template + '"')
    return GRAPH.format(**lines)


def _codes(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    return [d.code for d in lint_file(path)]


@pytest.mark.parametrize("field", list(FIELDS))
def test_every_field_is_clean_with_a_closed_tag(tmp_path: Path, field: str) -> None:
    assert _codes(tmp_path, graph(field, "{{ x }}")) == []


@pytest.mark.parametrize("template", UNCLOSED)
@pytest.mark.parametrize("field", list(FIELDS))
def test_an_unclosed_tag_is_reported_in_every_field(
    tmp_path: Path, field: str, template: str
) -> None:
    assert _codes(tmp_path, graph(field, template)) == ["template-syntax"]


def test_a_known_skeleton_never_hides_an_error() -> None:
    assert analyse("{{ x }}")[0] is None  # the skeleton of both texts below is cached
    assert analyse("a {{ x }} b")[0] is None
    for broken in ("a {{ x }} b {{ y", "a {{ x }} b }}{{", "{{ x }} {# c"):
        assert skeleton(broken) is None
    assert skeleton("a {{ x }} b {{ y }}") == "{{ x }}{{ y }}"
    assert skeleton('{{ "}}" }}') is None  # the closer inside a string: only Jinja knows


@pytest.mark.parametrize(
    "template",
    [
        '{{ "a" * 10**8 }}',
        "{{ [1] * 10**8 }}",
        "{{ 10**(10**9) }}",
        "{{ 10**5000 }}",
        "{{ ('a' * 10**8) | length }}",
        "{% set s = 'a' * 10**8 %}{{ s }}",
    ],
)
def test_lint_runs_no_template_code(template: str) -> None:
    tracemalloc.start()
    try:
        error, names = analyse(template)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error is None
    assert names == frozenset()
    assert peak < 5_000_000  # evaluating any of these takes 100 MB or never ends


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ 1" + "0" * 5000 + " }}", "more than 4,300 digits"),
        ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deeply"),
        ("{{ x | nosuchfilter }}", "No filter named 'nosuchfilter'"),
        ("{% if x is nosuchtest %}{% endif %}", "No test named 'nosuchtest'"),
        # Jinja says only `unexpected char "'" at 25`: the text before it is quoted
        (
            "{% if turn <= 1 %Hello, I'm Jessica.{% endif %}",
            'unexpected "\'" inside a tag, right after `{% if turn <= 1 %Hello, I`',
        ),
    ],
)
def test_what_jinja_would_refuse_is_a_problem_with_a_line(template: str, message: str) -> None:
    error, _ = analyse(template)
    assert error is not None
    assert error[0] == 1
    assert message in error[1]


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("{% set x = 1 %}{{ x }}", set()),
        ("{{ x }}{% set x = 1 %}", {"x"}),
        ("{% for i in items %}{{ i }}{{ loop.index }}{% endfor %}{{ i }}", {"items", "i"}),
        ("{% macro m(a, b=c) %}{{ a }}{{ caller() }}{% endmacro %}{{ m(1) }}", {"c"}),
        ("{% with a = b %}{{ a }}{% endwith %}{{ a }}", {"a", "b"}),
        ("{% set ns = namespace(n=1) %}{% set ns.n = q %}", {"q"}),
        ("{% if a %}{% set b = 1 %}{% endif %}{{ b }}", {"a", "b"}),
        ("{{ range(3) | list }}{{ files | join(', ') }}", {"files"}),
    ],
)
def test_names_follow_jinja_scoping(template: str, names: set[str]) -> None:
    assert analyse(template) == (None, frozenset(names))


def _located(tmp_path: Path, say: str) -> tuple[tuple[int, int], str, str]:
    """Where lint puts the template error of a multi-line `say:`, its message, the text."""
    lines = {name: line.format(t="plain") for name, line in FIELDS.items()}
    lines["say"] = say
    text = GRAPH.format(**lines)
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    [found] = [d for d in lint_file(path) if d.code == "template-syntax"]
    return (found.line, found.column), found.message, text


@pytest.mark.parametrize(
    "say",
    [
        "    say: >\n      Hello there,\n      and welcome,\n      {{ a + }} friend.",
        "    say: >-\n      Hello there,\n\n      {{ a + }} friend.\n      Bye.",
        "    say: |\n      Hello there,\n      {{ a + }} friend.",
        "    say: Hello there,\n      and welcome,\n      {{ a + }} friend.",
    ],
    ids=["folded", "folded-strip", "literal", "plain"],
)
def test_an_error_in_a_multi_line_text_is_located_at_its_own_line(tmp_path: Path, say: str) -> None:
    where, message, text = _located(tmp_path, say)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "{{ a + }}" in t)
    assert where == (line, 7), message
    assert "somewhere" not in message


def test_an_error_whose_line_the_folding_hides_says_so_at_the_first_line(
    tmp_path: Path,
) -> None:
    # An escaped line break inside a double-quoted text: as written, the tag holds a `\`.
    say = '    say: "Hello there,\n      {{ a \\\n      + }} friend."'
    where, message, text = _located(tmp_path, say)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "say:" in t)
    assert where == (line, 10)
    assert message.endswith("(somewhere in this multi-line text; the folding hides the exact line)")
