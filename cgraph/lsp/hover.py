"""Hover: a state's type, objective and exits; a slot's type and description; a variable's
first value; a tool's handler and parameters; a key's documentation from the schema; and
the lint rule behind a diagnostic, with a link to its page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from cgraph.lint.codes import CODES
from cgraph.lsp import cursor, schema
from cgraph.lsp.files import Files
from cgraph.lsp.index import Index, Symbol

RULES_URL = "https://cgraph.dev/reference/lint-rules/"
"""The published lint-rules page; a code's anchor is the code itself."""
_KEY = re.compile(r"^\s*(?:-\s+)*([A-Za-z_][\w.\-]*)\s*:")


def rule_url(code: str) -> str:
    return f"{RULES_URL}#{code}"


def hover(
    files: Files, path: Path, line: int, column: int, diagnostics: list[t.Diagnostic]
) -> t.Hover | None:
    parts: list[str] = []
    own = files.index(path)
    found = own.at(line, column) if own else None
    if found is not None:
        parts.append(describe(files, found.symbol))
    else:
        parts.extend(_key(files, path, line, column, own))
    for diagnostic in diagnostics:
        if _covers(diagnostic.range, line, column) and diagnostic.code in CODES:
            code = str(diagnostic.code)
            parts.append(f"`{code}`: {CODES[code]} [The rule]({rule_url(code)})")
    text = "\n\n---\n\n".join(p for p in parts if p)
    return t.Hover(t.MarkupContent(t.MarkupKind.Markdown, text)) if text else None


def _covers(where: t.Range, line: int, column: int) -> bool:
    start, end = where.start, where.end
    return (start.line, start.character) <= (line, column) <= (end.line, end.character)


def describe(files: Files, symbol: Symbol) -> str:
    index = files.index(symbol.file)
    data: dict[str, Any] = index.data if index and isinstance(index.data, dict) else {}
    if symbol.kind == "state":
        return _state(symbol.name, _mapping(data.get("states")).get(symbol.name))
    if symbol.kind == "slot":
        return _slot(symbol.name, _mapping(data.get("slots")).get(symbol.name))
    if symbol.kind == "tool":
        tools = data.get("tools")
        listed = tools if isinstance(tools, list) else []
        return _tool(
            symbol.name, next((x for x in listed if _mapping(x).get("name") == symbol.name), None)
        )
    if symbol.kind == "variable":
        variables = _mapping(data.get("variables"))
        if symbol.name in variables:
            return f"**variable** `{symbol.name}` = `{variables[symbol.name]!r}`"
        return f"**variable** `{symbol.name}` (set by a state: `set:` or a tool's `result:`)"
    name = data.get("name", symbol.file.name)
    note = data.get("description", "")
    return f"**graph** `{name}` ({symbol.file.name})" + (f"\n\n{note}" if note else "")


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _state(name: str, state: Any) -> str:
    state = _mapping(state)
    lines = [f"**{state.get('type', '?')} state** `{name}`", "", str(state.get("objective", ""))]
    exits = state.get("exit_conditions")
    if isinstance(exits, list) and exits:
        lines += ["", "Exits:"]
        for exit_ in (_mapping(e) for e in exits):
            label = exit_.get("description") or (
                f"when {exit_['when']}" if exit_.get("when") else ""
            )
            lines.append(f"- {label} → `{exit_.get('next_state', '?')}`")
    elif state.get("next_state"):
        lines += ["", f"Then → `{state['next_state']}`"]
    return "\n".join(lines)


def _slot(name: str, slot: Any) -> str:
    slot = _mapping(slot)
    head = f"**slot** `{name}`: {slot.get('type', 'string')}"
    extra = [str(slot["description"])] if slot.get("description") else []
    if slot.get("enum"):
        extra.append("one of " + ", ".join(f"`{v}`" for v in slot["enum"]))
    return "\n\n".join([head, *extra])


def _tool(name: str, tool: Any) -> str:
    tool = _mapping(tool)
    lines = [f"**tool** `{name}` → `{tool.get('handler', '?')}`"]
    if tool.get("description"):
        lines += ["", str(tool["description"])]
    properties = _mapping(_mapping(tool.get("parameters")).get("properties"))
    if properties:
        lines += ["", "Parameters:"]
        for parameter, spec in properties.items():
            lines.append(f"- `{parameter}`: {_mapping(spec).get('type', 'any')}")
    return "\n".join(lines)


def _key(files: Files, path: Path, line: int, column: int, own: Index | None) -> list[str]:
    """A key's documentation, when the cursor is on a key."""
    text = files.text(path) or ""
    lines = text.split("\n")
    current = lines[line] if line < len(lines) else ""
    found = _KEY.match(current)
    if found is None or not found.start(1) <= column <= found.end(1):
        return []
    where = cursor.at(text, line, found.end(1) + 1)
    graph = files.index(own.graph_file) if own and own.graph_file else None
    types = {name: kind for name, (kind, _) in graph.states.items()} if graph else {}
    whole = schema.root(own.kind if own else "graph")
    parent = schema.at(whole, where.path[:-1], types)
    spec = schema.properties(parent, whole).get(where.path[-1]) if where.path else None
    note = schema.describe(spec)
    return [f"`{where.path[-1]}`: {note}"] if note else []
