"""Completion: what may be written where the cursor is, from the graph's own names and the
published schema's keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from cgraph.lint.walk import looks_like_graph
from cgraph.lsp import schema
from cgraph.lsp.cursor import ITEM, Cursor
from cgraph.lsp.files import Files
from cgraph.lsp.index import FileKind, Index
from cgraph.spec.model import CROSS, TYPE_LETTERS
from cgraph.spec.names import END, RESUME
from cgraph.spec.simfile import SUFFIXES as SIM_SUFFIXES
from cgraph.spec.templating import BUILTIN_NAMES

STATE_KEYS = frozenset(
    {"start", "state", "next_state", "on_error", "on_limit", "except"}
    | {"path", "path_includes", "path_excludes", "interrupted"}
)
"""Keys whose values (or items) name a state."""
SLOT_KEYS = frozenset({"collect", "reset", "returns"})
NAME_KEYS = frozenset({"when", "result"})
"""Keys whose values read (or write) slots and variables."""
_TOOL_KEYS = frozenset({"tool", "tools"})
_NOT_GRAPHS = (".test.yaml", *SIM_SUFFIXES)


def complete(
    files: Files, path: Path, cursor: Cursor, line: int, column: int
) -> list[t.CompletionItem]:
    """The completion items at the cursor of file `path`."""
    own = files.index(path, typing=line)
    kind = own.kind if own is not None else "graph"
    graph = files.index(own.graph_file) if own and own.graph_file else None
    edit = t.Range(t.Position(line, column - len(cursor.word)), t.Position(line, column))
    sims = _sim_items(cursor, graph) if kind == "sim" else None
    found = list(_items(files, path, cursor, graph, kind) if sims is None else sims)
    for item in found:
        item.text_edit = t.TextEdit(edit, item.insert_text or item.label)
        item.insert_text = None
    return found


def _items(
    files: Files, path: Path, cursor: Cursor, graph: Index | None, kind: FileKind
) -> Iterator[t.CompletionItem]:
    tests = kind == "test"
    key = cursor.key
    if cursor.mode == "block":
        yield from _states(graph, ends=False) if key == "topology" else ()
        return
    if cursor.mode == "template":
        yield from _names(graph, builtins=True)
        return
    if cursor.mode in ("value", "item"):
        if tests and key == "scripted":
            return
        if key in STATE_KEYS or (tests and key == "state"):
            yield from _targets(files, path, cursor, graph, tests)
            return
        if key in SLOT_KEYS:
            yield from _names(graph, kinds=("slot",))
            return
        if key in NAME_KEYS:
            yield from _names(graph, builtins=key == "when")
            return
        if key in _TOOL_KEYS and cursor.state is not None:
            yield from _tools(graph)
            return
        if key == "graph":
            yield from _graph_files(path)
            return
    yield from _schema_items(cursor, graph, kind)


def _sim_items(cursor: Cursor, graph: Index | None) -> list[t.CompletionItem] | None:
    """A sim file's own names: the graph's states in a goal and as `says:` keys, its slots
    as `facts:` keys; None where the schema's keys (or a file name) are wanted instead."""
    where = cursor.path
    if cursor.mode in ("value", "item") and cursor.key in ("reach", "never"):
        return list(_states(graph, ends=False))
    if cursor.mode != "key" or not where:
        return None
    if where[-1] == "says":
        found = list(_states(graph, ends=False))
    elif where[-1] == "facts":
        found = list(_names(graph, kinds=("slot",)))
    elif where[-2:] == ("goal", "slots"):
        found = list(_names(graph))
    else:
        return None
    for item in found:
        item.insert_text = f"{item.label}: "
    return found


def _schema_items(
    cursor: Cursor, graph: Index | None, kind: FileKind
) -> Iterator[t.CompletionItem]:
    whole = schema.root(kind)
    types = {name: kind for name, (kind, _) in graph.states.items()} if graph else {}
    if cursor.mode == "value":
        for value in schema.values(schema.at(whole, cursor.path, types), whole):
            yield t.CompletionItem(value, kind=t.CompletionItemKind.EnumMember)
        return
    where = cursor.path
    if cursor.mode == "item" and where[-1:] == (ITEM,):
        item = schema.at(whole, where, types)
        if not schema.properties(item, whole):  # a list of plain values: nothing to offer
            return
    if len(where) == 3 and where[0] == "states" and where[2] == "arguments" and graph:
        yield from _parameters(graph, where[1])
        return
    if where[:2] == ("limits", "max_visits") and len(where) == 2:
        yield from _states(graph, ends=False)
        return
    mapping = schema.at(whole, where, types)
    for name, spec in schema.properties(mapping, whole).items():
        yield t.CompletionItem(
            name,
            kind=t.CompletionItemKind.Property,
            detail=_kind_of(spec),
            documentation=t.MarkupContent(t.MarkupKind.Markdown, schema.describe(spec)),
            insert_text=f"{name}: ",
        )


def _kind_of(spec: dict[str, Any]) -> str:
    kinds = [b.get("type") for b in spec.get("anyOf", [spec]) if isinstance(b, dict)]
    return " | ".join(str(k) for k in kinds if k and k != "null") or "object"


def _targets(
    files: Files, path: Path, cursor: Cursor, graph: Index | None, tests: bool
) -> Iterator[t.CompletionItem]:
    word = cursor.word
    if CROSS in word:
        file, _, _ = word.rpartition(CROSS)
        folder = graph.path.parent if graph and tests else path.parent
        other = files.index((folder / file).resolve())
        for item in _states(other, ends=False):
            item.insert_text = f"{file}{CROSS}{item.label}"
            item.filter_text = item.insert_text
            yield item
        return
    ends = cursor.key not in ("start", "except", "max_visits") or tests
    yield from _states(graph, ends=ends, resume=cursor.key == "next_state")
    if cursor.key in ("next_state", "on_limit", "on_error") and graph is not None:
        for item in _graph_files(path, own=graph.path):
            item.label = f"{item.label}{CROSS}"
            item.insert_text = item.label
            item.command = t.Command("states", "editor.action.triggerSuggest")
            yield item


def _states(graph: Index | None, *, ends: bool, resume: bool = False) -> Iterator[t.CompletionItem]:
    if graph is None:
        return
    for name, (kind, _) in graph.states.items():
        letter = TYPE_LETTERS.get(kind, "?")
        yield t.CompletionItem(
            name,
            kind=t.CompletionItemKind.EnumMember,
            detail=f"[{letter}] {kind} state",
            documentation=_objective(graph, name),
        )
    if ends:
        yield t.CompletionItem(END, kind=t.CompletionItemKind.Constant, detail="the end")
    if resume:
        yield t.CompletionItem(
            RESUME,
            kind=t.CompletionItemKind.Constant,
            detail="back to the state a `resume: true` exit left",
        )


def _objective(graph: Index, state: str) -> str | None:
    data = graph.data if isinstance(graph.data, dict) else {}
    found = (data.get("states") or {}).get(state)
    objective = found.get("objective") if isinstance(found, dict) else None
    return str(objective) if objective else None


def _names(
    graph: Index | None, *, kinds: tuple[str, ...] = ("slot", "variable"), builtins: bool = False
) -> Iterator[t.CompletionItem]:
    seen: set[str] = set()
    data = graph.data if graph is not None and isinstance(graph.data, dict) else {}
    declared = data.get("slots")
    slots: dict[str, Any] = declared if isinstance(declared, dict) else {}
    for occurrence in graph.occurrences if graph else ():
        symbol = occurrence.symbol
        if symbol.kind not in kinds or symbol.name in seen:
            continue
        seen.add(symbol.name)
        slot = slots.get(symbol.name) if symbol.kind == "slot" else None
        detail = f"slot ({slot.get('type', 'string')})" if isinstance(slot, dict) else symbol.kind
        note = slot.get("description") if isinstance(slot, dict) else None
        yield t.CompletionItem(
            symbol.name, kind=t.CompletionItemKind.Variable, detail=detail, documentation=note
        )
    for name in sorted(BUILTIN_NAMES) if builtins else ():
        yield t.CompletionItem(name, kind=t.CompletionItemKind.Keyword, detail="built in")


def _tools(graph: Index | None) -> Iterator[t.CompletionItem]:
    for tool in _tool_data(graph):
        yield t.CompletionItem(
            str(tool.get("name")),
            kind=t.CompletionItemKind.Function,
            detail=str(tool.get("handler", "")),
            documentation=str(tool.get("description", "")) or None,
        )


def _tool_data(graph: Index | None) -> list[dict[str, Any]]:
    data = graph.data if graph is not None and isinstance(graph.data, dict) else {}
    tools = data.get("tools")
    return (
        [x for x in tools if isinstance(x, dict) and "name" in x] if isinstance(tools, list) else []
    )


def _parameters(graph: Index, state: str) -> Iterator[t.CompletionItem]:
    data = graph.data if isinstance(graph.data, dict) else {}
    found = (data.get("states") or {}).get(state)
    name = found.get("tool") if isinstance(found, dict) else None
    tool = next((x for x in _tool_data(graph) if x.get("name") == name), None)
    parameters = tool.get("parameters") if tool else None
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    required = set(parameters.get("required") or ()) if isinstance(parameters, dict) else set()
    for parameter, spec in (properties or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        yield t.CompletionItem(
            parameter,
            kind=t.CompletionItemKind.Field,
            detail=f"{spec.get('type', 'any')}{' (required)' if parameter in required else ''}",
            documentation=str(spec.get("description", "")) or None,
            insert_text=f"{parameter}: ",
        )


def _graph_files(path: Path, own: Path | None = None) -> Iterator[t.CompletionItem]:
    """Graph files beside this one (and, for a test file, in the folder above)."""
    folders = [(path.parent, "")]
    if path.name.endswith((".test.yaml", *SIM_SUFFIXES)):
        folders.append((path.parent.parent, "../"))
    for folder, prefix in folders:
        for candidate in sorted(folder.glob("*.y*ml")):
            if candidate.resolve() in (path, own) or candidate.name.endswith(_NOT_GRAPHS):
                continue
            if looks_like_graph(candidate):
                yield t.CompletionItem(prefix + candidate.name, kind=t.CompletionItemKind.File)
