"""The files the server knows: the editor's buffers over the disk, each file's index, and
what each graph depends on (its sub-graphs, `file#state` targets, tool modules, a test
file's graph), so that a change to one re-lints those that use it."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cgraph.diagnostics import Diagnostic
from cgraph.lint.walk import SUFFIXES, lint_paths, looks_like_graph
from cgraph.lsp.index import Index, build
from cgraph.spec.files import Refusal, read_bytes
from cgraph.spec.kept import Kept
from cgraph.spec.limits import MAX_FILE_BYTES, ReadLimits
from cgraph.spec.read import read_file, read_text
from cgraph.spec.trust import Trust

MAX_WORKSPACE_FILES = 5000
"""Files a workspace search reads at most (references and rename across files)."""
_SKIPPED = frozenset({"node_modules", "__pycache__", "site", "venv"})


@dataclass(frozen=True, slots=True)
class Linted:
    diagnostics: list[Diagnostic]
    text: str
    """The text the diagnostics are about."""


def resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


class Files:
    def __init__(
        self, root: Path | None = None, trust: Trust | None = None, limits: ReadLimits | None = None
    ) -> None:
        self.root = root
        self.trust = trust or Trust()
        """What graphs may reach besides their folders, as `cgraph lint` is told."""
        self.limits = limits or ReadLimits()
        self.open: dict[Path, str] = {}
        """Buffers the editor holds, by resolved path."""
        self.subgraphs: dict[Path, frozenset[Path]] = {}
        """The sub-graph files each graph's last lint read."""
        self._indexes: dict[Path, tuple[object, Index]] = {}
        self.kept = Kept()
        """What lints of the buffers keep: a keystroke reads and checks again only the
        parts and states it changed."""

    def text(self, path: Path) -> str | None:
        if path in self.open:
            return self.open[path]
        doc = read_file(path, self.limits.file_size)
        return doc.text if doc.ok or doc.text else None

    def index(self, path: Path, typing: int | None = None) -> Index | None:
        """The file's index; while its text does not parse, the index of the text without
        the line being `typing` (0-based), else the last one that parsed."""
        stamp = self._stamp(path)
        cached = self._indexes.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        text = self.open.get(path)
        doc = read_file(path, self.limits.file_size) if text is None else read_text(text, str(path))
        if not doc.ok and text is not None and typing is not None:
            lines = text.split("\n")
            if typing < len(lines):
                lines[typing] = ""
                doc = read_text("\n".join(lines), str(path))
        if not doc.ok:
            return cached[1] if cached else None
        found = build(doc, self.limits.file_size)
        self._indexes[path] = (stamp, found)
        return found

    def _stamp(self, path: Path) -> object:
        if path in self.open:
            return ("open", hash(self.open[path]))
        try:
            stat = path.stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def lint(self, path: Path) -> Linted:
        """Lint diagnostics of one file as the editor holds it (and its sub-graphs)."""
        text = self.open.get(path, "")
        result = lint_paths(
            [path], texts=dict(self.open), kept=self.kept, trust=self.trust, limits=self.limits
        )
        own = [d for d in result.diagnostics if resolved(d.file) == path]
        self.subgraphs[path] = frozenset(resolved(f) for f in result.files) - {path}
        return Linted(own, text)

    def uses(self, path: Path) -> frozenset[Path]:
        """The files a file's diagnostics depend on (its index is built only when asked:
        a lint parses the text once)."""
        return self.subgraphs.get(path, frozenset()) | frozenset(self._uses(path))

    def _uses(self, path: Path) -> Iterator[Path]:
        index = self.index(path)
        if index is None:
            return
        if index.graph_file is not None:
            yield index.graph_file
        for occurrence in index.occurrences:
            if occurrence.symbol.kind == "file":
                yield occurrence.symbol.file
        for handler in index.handlers.values():
            module = handler_file(path.parent, handler)
            if module is not None:
                yield module

    def dependents(self, changed: Path) -> list[Path]:
        """Open files whose diagnostics may change when `changed` does."""
        return [p for p in list(self.open) if p != changed and changed in self.uses(p)]

    def workspace(self) -> Iterator[Path]:
        """Graph and test files under the workspace root (and every open one)."""
        seen = set(self.open)
        yield from self.open
        if self.root is None:
            return
        count = 0
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
            for name in sorted(names):
                path = resolved(Path(folder, name))
                if not name.endswith(SUFFIXES) or path in seen:
                    continue
                count += 1
                if count > MAX_WORKSPACE_FILES:
                    return
                if looks_like_graph(path):
                    seen.add(path)
                    yield path

    def indexes(self) -> Iterator[Index]:
        for path in self.workspace():
            found = self.index(path)
            if found is not None:
                yield found


def handler_file(folder: Path, handler: str) -> Path | None:
    """The Python file of a `module:function` handler beside a graph, if there is one."""
    module = handler.partition(":")[0]
    base = folder.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return resolved(candidate)
    return None


def function_line(source: Path, name: str, limit: int = MAX_FILE_BYTES) -> int:
    """The 0-based line of `def name` in a Python file (0 when it is not found, or the
    file is not a regular one of at most `limit` bytes)."""
    raw = read_bytes(source, limit)
    if isinstance(raw, Refusal):
        return 0
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node.lineno - 1
    return 0
