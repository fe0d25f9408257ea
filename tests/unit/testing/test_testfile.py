"""The test-file format: its schema follows the models, and bad files get located errors."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from cgraph.errors import GraphError
from cgraph.spec import testfile
from cgraph.spec.read import read_text
from cgraph.spec.schema import dumps
from cgraph.spec.testfile import Expect, Scripted, load_tests, parse_tests
from cgraph.testing.expectations import _RULES
from tests.conftest import GRAPHS, ROOT

EXAMPLES = sorted((GRAPHS / "tests").glob("*.test.yaml"))
SHIPPED = [
    ROOT / "schemas" / "cgraph-test.schema.json",
    ROOT / "cgraph/spec/data/cgraph-test.schema.json",
]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_schema_is_generated_from_the_models(path: Path) -> None:
    assert path.read_text() == dumps(testfile.generate()), "run `make schema`"


def test_every_expectation_key_has_a_check_and_every_check_a_key() -> None:
    assert list(_RULES) == [f.name for f in fields(Expect)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_test_file_loads(path: Path) -> None:
    tests = load_tests(path)
    assert tests.graph_path.is_file() and tests.cases


def test_a_scripted_model_is_written_inline() -> None:
    tests = load_tests(GRAPHS / "tests" / "request_lifecycle.retry.test.yaml")
    assert isinstance(tests.model, Scripted) and "reflecting" in tests.model.scripted


def parse(text: str) -> list[str]:
    tests, diagnostics = parse_tests(read_text(text, "t.test.yaml"))
    assert tests is None
    return [d.render() for d in diagnostics]


def test_an_unknown_expectation_is_located_with_the_allowed_keys() -> None:
    found = parse(
        "cgraph-test: 1\ngraph: g.yaml\ncases:\n  - name: a\n    turns:\n"
        "      - user: hi\n        expect: {stat: x}\n"
    )
    assert len(found) == 1
    assert found[0].startswith("t.test.yaml:7:18 error unknown-key")
    assert "did you mean `state`?" in found[0] and "path_includes" in found[0]


def test_a_turn_may_end_in_a_state_of_a_sub_graph() -> None:
    text = (
        "cgraph-test: 1\ngraph: g.yaml\ncases:\n  - name: a\n    turns:\n"
        "      - user: hi\n        expect: {state: research.yaml#present_findings}\n"
    )
    tests, diagnostics = parse_tests(read_text(text, "t.test.yaml"))
    assert diagnostics == [] and tests is not None
    assert tests.cases[0].turns[0].expect.state == "research.yaml#present_findings"


def test_a_missing_key_and_a_wrong_version_are_both_reported() -> None:
    found = parse("cgraph-test: 2\ngraph: g.yaml\ncases:\n  - turns: []\n")
    assert any("t.test.yaml:1:14" in f and "version 1" in f for f in found)
    assert any("missing `name`" in f for f in found)


def test_a_graph_file_is_not_a_test_file() -> None:
    with pytest.raises(GraphError) as caught:
        load_tests(GRAPHS / "research.yaml")
    assert "no top-level `cgraph-test:`" in str(caught.value)
