"""`cgraph.spec.conform` against jsonschema: the same verdict on every graph, and a built model.

jsonschema, the reference implementation, judges the published schema; cgraph's own
checker must agree with it on every fixture, every example and a thousand deterministic
mutations of the examples (a key dropped, an unknown or a schema key added, a value of
the wrong kind). One deliberate difference: a pattern's final `$` ends the text, as in
the ECMA regexes editors use, where Python's `re` also lets a final newline through.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from cgraph.spec import model
from cgraph.spec.conform import _Compiler, conform
from cgraph.spec.load import load_graph_text
from cgraph.spec.model import ActionState, ExitCondition, Graph
from cgraph.spec.read import read_file
from cgraph.spec.schema import published
from tests.conftest import FIXTURES, GRAPHS

EXAMPLES = sorted(GRAPHS.glob("*.yaml"))
READABLE = [p for p in sorted((FIXTURES / "lint").rglob("*.yaml")) if read_file(p).data is not None]
ODD_VALUES: list[Any] = [0, -1, 1.5, 2.0, 3, 10**400, "", "x y", "t", True, None, [], {}]
ODD_VALUES += [["a"], [{}], {"k": 1}, {"personal": 1}, {"action": "x"}, "a:b", "END"]


@cache
def _reference() -> Draft202012Validator:
    return Draft202012Validator(published())


@cache
def _schema_keys() -> tuple[str, ...]:
    """Every key the schema names anywhere, so edits also hit keys an example lacks."""
    schema = published()
    found = {key for d in [schema, *schema["$defs"].values()] for key in d.get("properties", {})}
    return tuple(sorted(found))


def _nodes(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        yield (*prefix, key)
        if isinstance(value, dict | list):
            yield from _nodes(value, (*prefix, key))


def _mutant(data: Any, rng: random.Random) -> Any:
    """One random edit: drop a key, add an unknown or a schema key, or swap in an odd value."""
    data = copy.deepcopy(data)
    path = rng.choice(list(_nodes(data)))
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    key, edit = path[-1], rng.randrange(5)
    if edit == 0 and isinstance(parent, dict):
        del parent[key]
    elif edit == 1 and isinstance(parent, dict):
        parent[f"{key}_x"] = 1
    elif edit == 2 and isinstance(parent, dict):
        parent[rng.choice(_schema_keys())] = copy.deepcopy(rng.choice(ODD_VALUES))
    else:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return data


def _mutants() -> list[tuple[str, Any]]:
    cases = []
    for path in EXAMPLES:
        data = read_file(path).data  # read as cgraph reads it
        rng = random.Random(path.name)
        cases += [(f"{path.stem}-{n}", _mutant(data, rng)) for n in range(200)]
    return cases


def _located(data: Any, path: tuple[Any, ...]) -> bool:
    for step in path:
        if not isinstance(data, dict | list) or step not in (
            data if isinstance(data, dict) else range(len(data))
        ):
            return False
        data = data[step]
    return True


@pytest.mark.parametrize("path", READABLE + EXAMPLES, ids=lambda p: p.name)
def test_conform_and_jsonschema_agree_on_every_fixture(path: Path) -> None:
    data = read_file(path).data
    graph, violations = conform(data)
    assert (graph is not None) == _reference().is_valid(data)
    assert (graph is None) == bool(violations)


@pytest.mark.slow
def test_conform_and_jsonschema_agree_on_mutated_examples() -> None:
    rejected = 0
    mutants = _mutants()
    for name, data in mutants:
        graph, violations = conform(data)
        assert (graph is not None) == _reference().is_valid(data), name
        rejected += graph is None
        assert all(_located(data, v.path) for v in violations), name
    assert 0.5 <= rejected / len(mutants) <= 0.9  # both verdicts are exercised


def test_the_built_model_is_frozen_dataclasses_with_defaults() -> None:
    graph, _ = conform(read_file(GRAPHS / "medical_checkin.yaml").data)
    assert isinstance(graph, Graph)
    welcome = graph.states["welcome_patient"]
    assert isinstance(welcome, ActionState)
    assert isinstance(welcome.exit_conditions, tuple)
    assert all(isinstance(e, ExitCondition) for e in welcome.exit_conditions)
    assert graph.limits.max_transitions_per_turn >= 1 and graph.source is None


def test_numbers_take_the_field_type_and_an_id_ends_at_its_last_character() -> None:
    base = "cgraph: 1\nname: g\nstart: a\nlimits: {max_reflections: 2.0}\nmodel: {timeout: 5}\n"
    state = "states:\n  a: {type: reflection, objective: o, next_state: END, max_visits: 3.0}\n"
    graph = load_graph_text(base + state)
    assert graph.limits.max_reflections == 2 and type(graph.limits.max_reflections) is int
    assert graph.states["a"].max_visits == 3 and type(graph.states["a"].max_visits) is int
    huge = load_graph_text(base.replace("timeout: 5", f"timeout: {10**400}") + state)
    assert huge.model.timeout == 10**400  # too big for a float: kept, as jsonschema accepts it
    assert graph.model.timeout == 5.0 and type(graph.model.timeout) is float
    data = yaml.safe_load(base + state)
    data["name"] = "g\n"
    assert [(v.path, v.kind) for v in conform(data)[1]] == [(("name",), "pattern")]


def test_a_keyword_the_checker_does_not_know_fails_at_compile_time() -> None:
    with pytest.raises(ValueError, match="format"):
        _Compiler({}, model).compile({"type": "string", "format": "email"})
