"""The docs' examples work: every block marked as a graph (or a test file) lints clean,
and every block marked runnable runs (from a folder holding the page's files, a tool's
handler among them, with
`graphs/` and `schemas/` beside them, as a reader in the repository would)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgraph.lint.walk import lint_paths
from tests.commands import environment
from tests.conftest import ROOT
from tests.unit.docs.pages import DOCS, Block, blocks, pages

MARKED = [block for page in pages() for block in blocks(page)]
RUNNABLE = [block for block in MARKED if block.kind == "runnable"]


def _folder(tmp: Path, page: Path) -> Path:
    """A folder holding the page's graphs and test files, and the repository's examples."""
    for block in blocks(page):
        if block.kind in ("graph", "test", "file"):
            (tmp / block.name).write_text(block.text + "\n", encoding="utf-8")
    for name in ("graphs", "schemas"):
        (tmp / name).symlink_to(ROOT / name)
    return tmp


def test_the_docs_mark_graphs_tests_and_runnable_examples() -> None:
    kinds = {block.kind for block in MARKED}
    assert kinds == {"graph", "test", "file", "runnable"}
    assert any(b.page.name == "getting-started.md" and b.kind == "graph" for b in MARKED)


@pytest.mark.parametrize(
    "page", sorted({b.page for b in MARKED if b.kind != "runnable"}), ids=lambda p: p.name
)
def test_every_graph_and_test_file_of_a_page_lints_clean(page: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, page)
    files = [folder / b.name for b in blocks(page) if b.kind in ("graph", "test")]
    result = lint_paths(files)
    assert result.diagnostics == [], "\n".join(d.render() for d in result.diagnostics)
    assert result.exit_code(strict=True) == 0


def _label(block: Block) -> str:
    first = block.text.splitlines()[0]
    return f"{block.page.relative_to(DOCS).as_posix()}: {first[:40]}"


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=_label)
def test_every_runnable_example_runs(block: Block, tmp_path: Path) -> None:
    folder = _folder(tmp_path, block.page)
    env = environment()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if block.language == "python":
        command = [sys.executable, "-c", block.text]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.text]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, (
        f"{block.text}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
