"""The one lookup of a tool handler's module next to its graph, shared by lint and runtime."""

from __future__ import annotations

from pathlib import Path

from cgraph.lint.tools import handler_problem
from cgraph.runtime.tools.load import load_handler
from cgraph.spec.tool_files import local_module


def test_a_module_file_then_a_package_under_the_graph_folder(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "inner").mkdir(parents=True)
    (tmp_path / "pkg" / "inner" / "__init__.py").write_text("def f(): return 2\n")
    (tmp_path / "pkg" / "mod.py").write_text("def f(): return 1\n")
    assert local_module("pkg.mod", tmp_path) == tmp_path / "pkg" / "mod.py"
    assert local_module("pkg.inner", tmp_path) == tmp_path / "pkg" / "inner" / "__init__.py"
    assert local_module("pkg.missing", tmp_path) is None


def test_lint_and_runtime_find_the_same_package_handler(tmp_path: Path) -> None:
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("def ping(): return 'pong'\n")
    assert handler_problem("helpers:ping", tmp_path) is None
    assert load_handler("helpers:ping", tmp_path)() == "pong"
    assert handler_problem("helpers:nope", tmp_path) is not None
