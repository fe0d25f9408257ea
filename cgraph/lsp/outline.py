"""The outline (states by type, then slots, variables and tools) and the code lens that
runs the test cases naming a state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from lsprotocol import types as t

from cgraph.lsp.files import Files
from cgraph.lsp.index import Index, Span, Symbol
from cgraph.spec.model import TYPE_LETTERS

RUN_TESTS = "cgraph.runTests"
"""The command a lens runs: arguments are a test file and the names of its cases."""
_KINDS = {
    "slot": t.SymbolKind.Field,
    "variable": t.SymbolKind.Variable,
    "tool": t.SymbolKind.Function,
}
_SECTIONS = {"slot": "slots", "variable": "variables", "tool": "tools"}


def symbols(index: Index, text: str) -> list[t.DocumentSymbol]:
    lines = text.split("\n")
    found: list[t.DocumentSymbol] = []
    ends = _state_ends(index, len(lines))
    for kind in TYPE_LETTERS:
        children = [
            _symbol(name, kind, span, ends[name], t.SymbolKind.Class)
            for name, (type_, span) in index.states.items()
            if type_ == kind
        ]
        if children:
            found.append(_group(f"{kind} states", children))
    for kind, section in _SECTIONS.items():
        children = [
            _symbol(o.symbol.name, kind, o.span, o.span.line, _KINDS[kind])
            for o in index.occurrences
            if o.defines and o.symbol.kind == kind
        ]
        if children:
            found.append(_group(section, children))
    return found


def _state_ends(index: Index, count: int) -> dict[str, int]:
    """The last line of each state's block: the line before the next state's key."""
    order = sorted(index.states.items(), key=lambda item: item[1][1].line)
    ends = {}
    for number, (name, (_, span)) in enumerate(order):
        following = order[number + 1][1][1].line - 1 if number + 1 < len(order) else count - 1
        ends[name] = max(span.line, following)
    return ends


def _symbol(name: str, detail: str, span: Span, last: int, kind: t.SymbolKind) -> t.DocumentSymbol:
    pick = t.Range(t.Position(span.line, span.start), t.Position(span.line, span.end))
    whole = t.Range(t.Position(span.line, 0), t.Position(last, 0) if last > span.line else pick.end)
    return t.DocumentSymbol(name, kind, whole, pick, detail=detail)


def _group(name: str, children: list[t.DocumentSymbol]) -> t.DocumentSymbol:
    first = children[0].range.start
    last = max((c.range.end for c in children), key=lambda p: (p.line, p.character))
    whole = t.Range(first, last)
    return t.DocumentSymbol(
        name, t.SymbolKind.Namespace, whole, children[0].selection_range, children=children
    )


def lenses(files: Files, index: Index) -> list[t.CodeLens]:
    """On each state some test case names: run those cases."""
    tests = [i for i in files.indexes() if i.kind == "test" and i.graph_file == index.path]
    found = []
    for name, (_, span) in index.states.items():
        symbol = Symbol("state", name, index.path)
        for test in tests:
            cases = sorted(set(_cases(test, symbol)))
            if not cases:
                continue
            title = f"▶ run {len(cases)} test{'s' if len(cases) > 1 else ''} ({test.path.name})"
            where = t.Range(t.Position(span.line, span.start), t.Position(span.line, span.end))
            command = t.Command(title, RUN_TESTS, arguments=[str(test.path), cases])
            found.append(t.CodeLens(where, command=command))
    return found


def _cases(test: Index, symbol: Symbol) -> Iterator[str]:
    for occurrence in test.of(symbol):
        case = test.case_at(occurrence.span.line)
        if case is not None:
            yield case


def test_command(path: Path, cases: list[str], files: Files) -> list[str]:
    """`cgraph test` arguments running exactly those cases of one file, allowed what the
    server lints with (its `--allow-module`, `--allow-path` and `--max-file-size`)."""
    allowed = [part for name in files.trust.modules for part in ("--allow-module", name)]
    allowed += [part for folder in files.trust.paths for part in ("--allow-path", str(folder))]
    allowed += ["--max-file-size", str(files.limits.file_size)]
    return ["test", str(path), *(part for case in cases for part in ("-k", case)), *allowed]
