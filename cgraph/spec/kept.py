"""What an editor's lints of one file keep between keystrokes: results computed from one
state's data alone, reused while that data is the very object they were computed from.

`cgraph.spec.reread.Rereader` hands back the same data objects for the states whose text
and first line a change did not touch, so a state's identity stands for its text and its
place in the file: its schema check, and what lint gathers from it alone, run again only
for the states a keystroke changed. Only what the last lint of the file used is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from cgraph.diagnostics import DataPath
from cgraph.spec import model
from cgraph.spec.conform import SchemaCheck, Violation, compile_schema
from cgraph.spec.read import Document
from cgraph.spec.reread import Rereader
from cgraph.spec.schema import published

T = TypeVar("T")


class StateMemo:
    """Per-state results of one file's lints (the data must not be changed after it is read:
    lint only reads it)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], tuple[object, Hashable, Any]] = {}
        self._now: dict[tuple[str, int], tuple[object, Hashable, Any]] = {}
        self._check: SchemaCheck | None = None

    def turn(self) -> None:
        """A new lint of the file begins: what the one before did not use is dropped."""
        self._last, self._now = self._now, {}

    def get(self, kind: str, value: object, tag: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, or what it gave for this very `value` (and `tag`) last time. Holding
        `value` keeps its `id` from being reused by another object."""
        key = (kind, id(value))
        entry = self._now.get(key) or self._last.get(key)
        if entry is None or entry[0] is not value or entry[1] != tag:
            entry = (value, tag, compute())
        self._now[key] = entry
        result: T = entry[2]
        return result

    def conform(self, data: Any) -> tuple[model.Graph | None, list[Violation]]:
        """`cgraph.spec.conform.conform(data)`, each state checked only when it is new."""
        if self._check is None:
            self._check = compile_schema(published(), model, model.Graph, each=self._kept)
        violations: list[Violation] = []
        graph = self._check(data, (), violations)
        return (None if violations else graph), violations

    def _kept(self, check: SchemaCheck) -> SchemaCheck:
        def kept(value: Any, path: DataPath, out: list[Violation]) -> Any:
            def run() -> tuple[Any, list[Violation]]:
                found: list[Violation] = []
                return check(value, path, found), found

            built, found = self.get("schema", value, path, run)
            out.extend(found)
            return built

        return kept


class Kept:
    """What an editor's lints keep between keystrokes, per file: the parts of its last read
    (`Rereader`) and its states' results (`StateMemo`)."""

    def __init__(self) -> None:
        self.reads = Rereader()
        self._memos: dict[str, StateMemo] = {}

    def read(self, text: str, file: str) -> Document:
        return self.reads.read(text, file)

    def memo(self, file: str) -> StateMemo:
        """The file's memo, turned for a new lint of it."""
        memo = self._memos.setdefault(file, StateMemo())
        memo.turn()
        return memo

    def forget(self, file: str) -> None:
        """Drop what was kept of a file (closed in the editor)."""
        self.reads.forget(file)
        self._memos.pop(file, None)
