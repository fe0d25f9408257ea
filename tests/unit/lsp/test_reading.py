"""The other files the language server reads for a file it indexes (a test file's graph,
a handler's Python file) are read as a graph is: a regular file within the size limit,
never a FIFO that would block the server."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cgraph.lsp.files import function_line
from cgraph.lsp.index import build
from cgraph.spec.read import read_text

GRAPH = "name: g\nslots:\n  party: {type: integer}\nstates: {}\n"
TEST = "cgraph-test: 1\ngraph: g.yaml\nvariables:\n  party: 2\ncases: []\n"
HANDLER = "import os\n\n\ndef check(args):\n    return args\n"


@pytest.fixture
def unblock() -> Iterator[list[Path]]:
    """FIFOs a test made: opened for writing at the end, which ends a reader left blocked
    on one (no reader: nothing to end)."""
    made: list[Path] = []
    yield made
    for fifo in made:
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """`call()`'s answer; a failure, not a hang, when it does not come in time."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(call).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)  # a call still blocked is ended by `unblock`


def slot_kinds(test_file: Path, limit: int) -> set[tuple[str, str]]:
    index = build(read_text(test_file.read_text(), str(test_file)), limit)
    return {(o.symbol.kind, o.symbol.name) for o in index.occurrences if o.symbol.name == "party"}


def test_a_test_files_graph_is_read_within_the_limit(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text(GRAPH)
    (tmp_path / "g.test.yaml").write_text(TEST)
    assert slot_kinds(tmp_path / "g.test.yaml", 10_000) == {("slot", "party")}
    # over the limit the graph is not read: its slots are not known, the name is a variable
    assert slot_kinds(tmp_path / "g.test.yaml", len(GRAPH) - 1) == {("variable", "party")}


def test_a_test_files_graph_that_is_a_fifo_is_not_waited_on(
    tmp_path: Path, unblock: list[Path]
) -> None:
    os.mkfifo(tmp_path / "g.yaml")
    unblock.append(tmp_path / "g.yaml")
    (tmp_path / "g.test.yaml").write_text(TEST)
    kinds = within(10, lambda: slot_kinds(tmp_path / "g.test.yaml", 10_000))
    assert kinds == {("variable", "party")}


def test_a_handlers_line_is_read_within_the_limit(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(HANDLER)
    assert function_line(source, "check", 10_000) == 3
    assert function_line(source, "check", len(HANDLER) - 1) == 0  # over the limit: not read


def test_a_handler_file_that_is_a_fifo_is_not_waited_on(
    tmp_path: Path, unblock: list[Path]
) -> None:
    fifo = tmp_path / "piped.py"
    os.mkfifo(fifo)
    unblock.append(fifo)
    assert within(10, lambda: function_line(fifo, "check")) == 0
