"""Tests never import the bench: what both use lives in `cgraph` or `tests/support`, so a
change to a bench script breaks no test (the bench's own tests are `bench/tests/`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.conftest import ROOT

TESTS = ROOT / "tests"
BENCH = ROOT / "bench"


def _forbidden() -> set[str]:
    """`bench`, and each bench script's name (importable once `bench/` is on sys.path)."""
    return {"bench", *(p.stem for p in BENCH.glob("*.py"))}


def _imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name.split(".")[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module.split(".")[0]


def test_no_test_imports_a_bench_module() -> None:
    forbidden = _forbidden()
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8")))
        if name in forbidden
    ]
    assert found == []


def test_the_guard_sees_both_ways_of_importing_the_bench() -> None:
    source = "import bench.x\nfrom bench.y import z\nfrom gen_graph import generate\n"
    names = {name for _, name in _imported(ast.parse(source))}
    assert {"bench", "gen_graph"} <= names and "gen_graph" in _forbidden()
