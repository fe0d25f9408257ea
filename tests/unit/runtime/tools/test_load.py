"""Tool handlers found next to the graph, then on the Python path; cached; located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.errors import ToolError
from cgraph.runtime.tools.load import load_handler
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "runtime"


def test_same_module_name_in_two_folders_does_not_collide(tmp_path: Path) -> None:
    for name, value in (("one", 1), ("two", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tools_fixture.py").write_text(f"def f():\n    return {value}\n")
    first = load_handler("tools_fixture:f", tmp_path / "one")
    second = load_handler("tools_fixture:f", tmp_path / "two")
    assert (first(), second()) == (1, 2)


def test_python_path_modules_load_too() -> None:
    assert load_handler("json:dumps")([1]) == "[1]"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing_module:f", "cannot import tool module"),
        ("tools_fixture:nothing", "has no function"),
    ],
)
def test_load_errors_are_tool_errors(spec: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        load_handler(spec, FOLDER)
