"""Every test a page names as `test_x.py::name` (or `::name`, after a file it named before
in the same cell or paragraph) is a test of that file: a page that says what guards a
behaviour cannot go on naming a test that was renamed or removed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.unit.docs.pages import DOCS, pages

NAMED = re.compile(r"`(?:[\w/]*/)?(test_\w+\.py)?::(test_\w+)`|`(?:[\w/]*/)?(test_\w+\.py)`")
"""`file::name`, a bare `::name` (the file named before it) or a bare `file`."""


def _tests_of(file: Path) -> set[str]:
    tree = ast.parse(file.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def _files() -> dict[str, set[str]]:
    """Each test file's name → the tests of every file of that name."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").glob("**/test_*.py"):
        found.setdefault(path.name, set()).update(_tests_of(path))
    return found


def named(text: str) -> list[tuple[str, str | None]]:
    """(file, test or None) for each test the text names, in order."""
    found: list[tuple[str, str | None]] = []
    for block in re.split(r"\n\s*\n|\|", text):  # a paragraph, or a table's cell
        last = None
        for with_test, test, bare in NAMED.findall(block):
            last = with_test or bare or last
            if last is None:
                raise AssertionError(f"`::{test}` names no file before it: {block[:80]!r}")
            found.append((last, test or None))
    return found


def test_a_bare_test_name_belongs_to_the_file_named_before_it() -> None:
    said = "`test_a.py::test_one` and `::test_two`; `tests/x/test_b.py` | `test_c.py::test_d`"
    assert named(said) == [
        ("test_a.py", "test_one"),
        ("test_a.py", "test_two"),
        ("test_b.py", None),
        ("test_c.py", "test_d"),
    ]


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_test_a_page_names_exists(page: Path) -> None:
    files = _files()
    for file, test in named(page.read_text()):
        assert file in files, f"{page.name} names {file}, which is no test file"
        if test is not None:
            assert test in files[file], f"{page.name} names {file}::{test}, which it has not"
