from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from cgraph.errors import GraphError
from cgraph.spec.load import load_graph, load_graph_text, parse_graph
from cgraph.spec.read import read_text
from tests.conftest import GRAPHS

MINIMAL = """\
cgraph: 1
name: tiny
start: hello
states:
  hello:
    type: action
    objective: Say hello.
    actions: [Greet.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - description: The user says bye.
        next_state: END
"""


def test_example_graph_loads_as_immutable_model() -> None:
    graph = load_graph(GRAPHS / "medical_checkin.yaml")
    assert graph.name == "medical_checkin"
    assert graph.source == GRAPHS / "medical_checkin.yaml"
    with pytest.raises(FrozenInstanceError):
        graph.name = "other"  # type: ignore[misc]


def test_missing_key_is_located_on_the_state() -> None:
    text = MINIMAL.replace("    exit_conditions:\n", "    exits:\n")
    with pytest.raises(GraphError) as info:
        load_graph_text(text, "g.yaml")
    rendered = str(info.value)
    assert (
        "g.yaml:5:3 error missing-key state `hello` (type action) is missing `exit_conditions`"
        in rendered
    )
    assert "g.yaml:12:5 error unknown-key" in rendered


def test_yaml11_word_stays_text_and_warns() -> None:
    graph = load_graph_text(
        MINIMAL.replace("next_state: END", "next_state: no")
        + "  no:\n"
        + "\n".join(
            "  " + line
            for line in MINIMAL.split("states:\n")[1].replace("hello:", "x:").splitlines()[1:]
        ),
        "g.yaml",
    )
    assert "no" in graph.states


def test_a_wrong_format_version_names_the_only_one() -> None:
    doc = read_text("cgraph: 2\nname: g\nstart: a\nstates: {}\n", "v.yaml")
    (diag,) = parse_graph(doc)[1]
    assert (diag.code, diag.message, diag.hint) == (
        "schema",
        "`cgraph` of the graph is `2`, expected 1",
        "use 1",
    )


def test_schema_problems_are_worded_for_designers_and_each_is_reported() -> None:
    text = """\
cgraph: 1
name: g
start: {a: b}
memory: {store: sometimes, ttl_days: {tasks: 1}}
tools:
  - {name: t, handler: "not a handler"}
states:
  x: []
  bad key: {type: reflection, objective: o, next_state: END}
  y: {type: decision, objective: "", exit_conditions: [{}]}
"""
    found = {(d.line, d.column, d.code, d.message) for d in parse_graph(read_text(text, "g"))[1]}
    assert found == {
        (3, 8, "schema", "`start` of the graph should be text or a list, got a mapping"),
        (
            4,
            17,
            "schema",
            "`store` of `memory` is text `sometimes`, "
            "expected 'every_turn', 'session_end' or 'off'",
        ),
        (
            4,
            39,
            "schema",
            "key `tasks` of `ttl_days` in `memory` is not one of 'personal', 'project' or 'task'",
        ),
        (6, 24, "schema", "`handler` of tools entry 1 `not a handler` is not `module:function`"),
        (8, 6, "schema", "state `x` should be a mapping of keys, got a list"),
        (9, 3, "schema", "key `bad key` of `states` in the graph is not a valid id"),
        (10, 34, "schema", "`objective` of state `y` (type decision) must not be empty"),
        (10, 56, "missing-key", "exit 1 of state `y` (type decision) is missing `next_state`"),
    }


def test_named_values_int_keys_and_empty_types_are_located_and_named() -> None:
    text = """\
cgraph: 1
name: g
start: a
limits: {max_visits: {a: x}}
states:
  1: {type: reflection, objective: o, next_state: END}
  a: {type: annotation, objective: o, set: {x: [1]}, max_visits: 3.0, next_state: END}
  b: {type: null, objective: o}
  c: {type: decision, objective: o, exit_conditions: [[x]]}
"""
    found = {(d.line, d.column, d.message) for d in parse_graph(read_text(text, "g"))[1]}
    assert found == {
        (4, 26, "`max_visits.a` of `limits` should be a whole number, got text `x`"),
        (6, 3, "key `1` of `states` in the graph is not a valid id"),
        (8, 13, "state `b` has `type:` with no value"),
        (9, 55, "exit 1 of state `c` (type decision) should be a mapping of keys, got a list"),
    }


def test_a_variable_over_the_value_limit_is_refused_where_it_is() -> None:
    text = MINIMAL.replace("states:", f"variables:\n  small: 1\n  big: {'x' * 1_100_000}\nstates:")
    with pytest.raises(GraphError) as caught:
        load_graph_text(text, "big.yaml")
    (diag,) = caught.value.diagnostics
    assert (diag.line, diag.code) == (6, "value-too-large")
    assert "variable `big`" in diag.message


def test_an_alias_bomb_is_refused_by_the_loader_as_by_lint() -> None:
    bomb = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = MINIMAL.replace("states:", "variables:\n  " + "\n".join(bomb) + "\nstates:")
    with pytest.raises(GraphError) as caught:
        load_graph_text(text, "bomb.yaml")
    assert [d.code for d in caught.value.diagnostics] == ["value-too-large"]


@pytest.mark.parametrize("section", ["agent", "limits", "memory", "model"])
def test_a_problem_in_a_section_is_named_by_its_dotted_key(section: str) -> None:
    from cgraph.spec.load import where

    assert where({}, (section, "history", "tokens")) == f"`{section}.history.tokens`"
    assert where({}, ("variables", "x")) == "the graph"
