"""Tool handlers found next to the graph, then on the Python path; cached; located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.errors import ToolError
from cgraph.runtime.tools.load import load_handler
from cgraph.spec.trust import Trust
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "runtime"


def test_same_module_name_in_two_folders_does_not_collide(tmp_path: Path) -> None:
    for name, value in (("one", 1), ("two", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tools_fixture.py").write_text(f"def f():\n    return {value}\n")
    first = load_handler("tools_fixture:f", tmp_path / "one")
    second = load_handler("tools_fixture:f", tmp_path / "two")
    assert (first(), second()) == (1, 2)


def test_python_path_modules_load_only_when_allowed() -> None:
    with pytest.raises(ToolError, match="`os` is neither a Python file in the graph's folder"):
        load_handler("os:system", FOLDER)  # a graph is not a shell
    allowed = Trust(modules=("json", "email"))
    assert load_handler("json:dumps", FOLDER, allowed)([1]) == "[1]"
    assert load_handler("email.utils:quote", FOLDER, allowed)("a") == "a"  # a submodule of one
    with pytest.raises(ToolError, match="nor an allowed module"):
        load_handler("jsonschema:validate", FOLDER, allowed)  # a name that only starts the same


def test_a_handler_loaded_with_trust_is_not_lent_to_a_call_without_it() -> None:
    assert load_handler("json:loads", FOLDER, Trust(modules=("json",)))("1") == 1
    with pytest.raises(ToolError, match="nor an allowed module"):
        load_handler("json:loads", FOLDER)  # the cache is per allowed modules too


def test_the_environment_allows_nothing_to_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CGRAPH_ALLOW_MODULES", "json")
    with pytest.raises(ToolError, match="nor an allowed module"):
        load_handler("json:dumps", FOLDER)  # only the command line reads it


def test_a_local_file_is_one_only_while_it_stays_in_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "real.py").write_text("def f():\n    return 1\n")
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "linked.py").symlink_to(outside / "real.py")
    with pytest.raises(ToolError, match="`linked` is neither a Python file in the graph's"):
        load_handler("linked:f", tmp_path / "graph")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing_module:f", "is neither a Python file in the graph's folder"),
        ("tools_fixture:nothing", "has no function"),
    ],
)
def test_load_errors_are_tool_errors(spec: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        load_handler(spec, FOLDER)
