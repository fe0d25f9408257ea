"""Graphs written for the last release keep working: every example of 0.1 loads and lints clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.lint.walk import lint_paths
from cgraph.spec.load import load_graph
from cgraph.spec.topology import derive, parse
from tests.conftest import FIXTURES

RELEASE = FIXTURES / "release_0_1"
GRAPHS = sorted(RELEASE.glob("*.yaml"))


def test_the_release_fixture_holds_every_example_of_the_release() -> None:
    assert {p.stem for p in GRAPHS} == {
        "assistant",
        "companion",
        "medical_checkin",
        "request_lifecycle",
        "research",
    }


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_a_release_graph_loads_without_the_new_keys(path: Path) -> None:
    graph = load_graph(path)
    assert graph.slots == {} and graph.global_exits == () and not graph.speaks_first
    assert graph.limits.on_limit == {}
    assert parse(derive(graph)).problems == []


def test_the_release_graphs_lint_clean_even_with_strict() -> None:
    result = lint_paths([RELEASE])
    assert result.diagnostics == []
    assert result.exit_code(strict=True) == 0
