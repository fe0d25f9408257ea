"""Going to a name's definition, finding its uses in every file, renaming it everywhere,
and the quick fixes lint proposes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from cgraph.lsp.files import Files, function_line, handler_file
from cgraph.lsp.index import Occurrence, Span, Symbol
from cgraph.spec.model import ID_PATTERN

RENAMED = frozenset({"state", "slot", "variable", "tool"})
_ID = re.compile(ID_PATTERN)
EARLY = "exit-waits-for-slots"
"""The lint code whose fix is a key to add (`early: true` or `early: false`)."""


def uri(path: Path) -> str:
    return path.as_uri()


def location(path: Path, span: Span) -> t.Location:
    return t.Location(uri(path), span_range(span))


def span_range(span: Span) -> t.Range:
    return t.Range(t.Position(span.line, span.start), t.Position(span.line, span.end))


def symbol_at(files: Files, path: Path, line: int, column: int) -> Occurrence | None:
    index = files.index(path)
    return index.at(line, column) if index is not None else None


def definition(files: Files, path: Path, line: int, column: int) -> list[t.Location]:
    found = symbol_at(files, path, line, column)
    if found is None:
        return []
    symbol = found.symbol
    if symbol.kind == "file":
        return [t.Location(uri(symbol.file), t.Range(t.Position(0, 0), t.Position(0, 0)))]
    places = [location(symbol.file, o.span) for o in _definitions(files, symbol)]
    if symbol.kind == "tool":
        places.extend(_handler(files, symbol))
    return places


def _definitions(files: Files, symbol: Symbol) -> list[Occurrence]:
    index = files.index(symbol.file)
    if index is None:
        return []
    own = list(index.of(symbol))
    # A variable a `set:` or a tool's `result:` writes has no `variables:` key: its first
    # assignment is where it is defined.
    return [o for o in own if o.defines] or own[:1]


def _handler(files: Files, symbol: Symbol) -> Iterator[t.Location]:
    index = files.index(symbol.file)
    handler = index.handlers.get(symbol.name) if index else None
    source = handler_file(symbol.file.parent, handler) if handler else None
    if handler and source is not None:
        line = function_line(source, handler.partition(":")[2], files.limits.file_size)
        yield t.Location(uri(source), t.Range(t.Position(line, 0), t.Position(line, 0)))


def references(files: Files, symbol: Symbol, *, declaration: bool = True) -> list[t.Location]:
    found = []
    for index in files.indexes():
        for occurrence in index.of(symbol):
            if declaration or not occurrence.defines:
                found.append(location(index.path, occurrence.span))
    return found


def prepare_rename(files: Files, path: Path, line: int, column: int) -> t.Range | None:
    found = symbol_at(files, path, line, column)
    return span_range(found.span) if found and found.symbol.kind in RENAMED else None


def rename(files: Files, path: Path, line: int, column: int, name: str) -> t.WorkspaceEdit | None:
    """Every occurrence of the name under the cursor, in every file, renamed to `name`."""
    found = symbol_at(files, path, line, column)
    if found is None or found.symbol.kind not in RENAMED:
        return None
    if not _ID.match(name):
        raise ValueError(f"`{name}` is not a valid id: letters, digits, `_`, `.` and `-`")
    changes: dict[str, list[t.TextEdit]] = {}
    for index in files.indexes():
        for occurrence in index.of(found.symbol):
            edit = t.TextEdit(span_range(occurrence.span), name)
            changes.setdefault(uri(index.path), []).append(edit)
    return t.WorkspaceEdit(changes=changes)


def fixes(text: str, doc_uri: str, diagnostics: list[t.Diagnostic]) -> list[t.CodeAction]:
    """Quick fixes for the diagnostics lint attached a fix (or a key to add) to."""
    lines = text.split("\n")
    actions = []
    for diagnostic in diagnostics:
        data: Any = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        if "old" in data and "new" in data:
            edit = _replace(lines, diagnostic.range.start, str(data["old"]), str(data["new"]))
            if edit is not None:
                actions.append(_action(f"Change to `{data['new']}`", doc_uri, edit, diagnostic))
        if diagnostic.code == EARLY:
            for value in ("true", "false"):
                edit = _add_key(lines, diagnostic.range.start, f"early: {value}")
                title = f"Add `early: {value}`" + (
                    " (may leave before the slots are filled)" if value == "true" else " (waits)"
                )
                actions.append(_action(title, doc_uri, edit, diagnostic, value == "true"))
    return actions


def _action(
    title: str, doc_uri: str, edit: t.TextEdit, diagnostic: t.Diagnostic, preferred: bool = True
) -> t.CodeAction:
    return t.CodeAction(
        title,
        kind=t.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=t.WorkspaceEdit(changes={doc_uri: [edit]}),
        is_preferred=preferred,
    )


def _replace(lines: list[str], start: t.Position, old: str, new: str) -> t.TextEdit | None:
    """`old` as a whole word at the diagnostic, or the nearest after it on its lines."""
    word = re.compile(rf"(?<![\w.\-]){re.escape(old)}(?![\w.\-])")
    for number in range(start.line, min(start.line + 50, len(lines))):
        text = lines[number]
        found = word.search(text, start.character if number == start.line else 0)
        if found is not None:
            where = t.Range(t.Position(number, found.start()), t.Position(number, found.end()))
            return t.TextEdit(where, new)
    return None


def _add_key(lines: list[str], start: t.Position, entry: str) -> t.TextEdit:
    """`entry` added to the mapping that starts at `start`, after its last line."""
    line, column = start.line, start.character
    head = lines[line] if line < len(lines) else ""
    if head[column : column + 1] == "{":  # a flow mapping: `- {description: …}`
        return t.TextEdit(
            t.Range(t.Position(line, column + 1), t.Position(line, column + 1)), f"{entry}, "
        )
    last = line
    for number in range(line + 1, len(lines)):
        text = lines[number]
        if not text.strip():
            continue
        if len(text) - len(text.lstrip(" ")) < column:  # the next item, or the next key up
            break
        last = number
    at = t.Position(last + 1, 0)
    return t.TextEdit(t.Range(at, at), " " * column + entry + "\n")
