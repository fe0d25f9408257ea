"""Every place a graph or test file writes a state, slot, variable, tool or graph file.

Read from the YAML node tree (`cgraph.spec.read.Document`), so each occurrence is located
exactly where it is written; names inside templates, `when:` conditions and the topology
are found in the node's own text. Definitions, references, rename, hover, the outline and
the code lens all answer from this one index.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from cgraph.spec.limits import MAX_FILE_BYTES
from cgraph.spec.model import CROSS
from cgraph.spec.names import END, RESUME, SIM_KEY, TESTS_KEY
from cgraph.spec.read import Document, read_file

Kind = Literal["state", "slot", "variable", "tool", "file"]
FileKind = Literal["graph", "test", "sim"]
_TARGET_KEYS = ("next_state", "on_error", "on_limit")
# `{{ … }}` and `{% … %}`: where a template reads names.
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_STATE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, slots=True)
class Span:
    """Where a name is written: 0-based line, and its start and end columns."""

    line: int
    start: int
    end: int

    def holds(self, line: int, column: int) -> bool:
        return self.line == line and self.start <= column <= self.end


@dataclass(frozen=True, slots=True)
class Symbol:
    """A named thing of one graph file (`file` is that graph, resolved)."""

    kind: Kind
    name: str
    file: Path


@dataclass(frozen=True, slots=True)
class Occurrence:
    symbol: Symbol
    span: Span
    defines: bool = False


@dataclass
class Index:
    """What one file writes, in order."""

    path: Path
    kind: FileKind = "graph"
    occurrences: list[Occurrence] = field(default_factory=list)
    graph_file: Path | None = None
    """A test or sim file's graph (resolved); a graph's is its own path."""
    states: dict[str, tuple[str, Span]] = field(default_factory=dict)
    """A graph's states: id → (type, where its key is)."""
    data: Any = None
    """The file's plain data (`Document.data`)."""
    handlers: dict[str, str] = field(default_factory=dict)
    """A graph's tools: name → `module:function`."""
    cases: list[tuple[str, int, int]] = field(default_factory=list)
    """A test file's cases: name, first and last line (0-based)."""

    def case_at(self, line: int) -> str | None:
        return next((name for name, first, last in self.cases if first <= line <= last), None)

    def at(self, line: int, column: int) -> Occurrence | None:
        return next((o for o in self.occurrences if o.span.holds(line, column)), None)

    def of(self, symbol: Symbol) -> Iterator[Occurrence]:
        return (o for o in self.occurrences if o.symbol == symbol)


class _Text:
    """Absolute offsets of a document's text ↔ line and column."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in re.finditer("\n", text))]

    def span(self, start: int, end: int) -> Span:
        line = bisect.bisect_right(self.starts, start) - 1
        return Span(line, start - self.starts[line], end - self.starts[line])


def build(doc: Document, limit: int = MAX_FILE_BYTES) -> Index:
    """The index of a read document (empty when it did not parse); another file it reads
    (a test file's graph) is read within `limit` bytes."""
    path = Path(os.path.realpath(doc.file))
    index = Index(path, data=doc.data)
    root = doc.root
    if not isinstance(root, yaml.MappingNode):
        return index
    builder = _Builder(index, _Text(doc.text), path, limit)
    if _entry(root, TESTS_KEY) is not None:
        index.kind = "test"
        builder.tests(root)
    elif _entry(root, SIM_KEY) is not None:
        index.kind = "sim"
        builder.sims(root)
    else:
        index.graph_file = path
        builder.graph(root)
    index.occurrences.sort(key=lambda o: (o.span.line, o.span.start))
    return index


def _entries(node: yaml.Node | None) -> list[tuple[str, yaml.Node, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        return []
    return [(str(k.value), k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]


def _entry(node: yaml.Node | None, key: str) -> yaml.Node | None:
    return next((v for k, _, v in _entries(node) if k == key), None)


def _items(node: yaml.Node | None) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return [node] if isinstance(node, yaml.ScalarNode) else []


def _scalars(node: yaml.Node | None) -> Iterator[yaml.ScalarNode]:
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for _, value in node.value:
            yield from _scalars(value)


class _Builder:
    def __init__(self, index: Index, text: _Text, path: Path, limit: int) -> None:
        self.index, self.limit = index, limit
        self.text = text
        self.path = path
        self.folder = path.parent
        self.slots: set[str] = set()
        self.variables: set[str] = set()

    def add(self, kind: Kind, name: str, node: yaml.Node, file: Path, defines: bool) -> None:
        """`name` as written in scalar `node` (a part of it: `file.yaml#name`)."""
        start, end = node.start_mark.index, node.end_mark.index
        found = self.text.text.rfind(name, start, end)
        if found < 0:
            return
        span = self.text.span(found, found + len(name))
        self.index.occurrences.append(Occurrence(Symbol(kind, name, file), span, defines))

    def target(self, node: yaml.Node, relative_to: Path | None = None) -> None:
        """A state named by `next_state:` and its kin: this graph's, or `file.yaml#state`."""
        if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str):
            return
        value = node.value
        if value in (END, RESUME):
            return
        if CROSS in value:
            file, _, state = value.rpartition(CROSS)
            folder = relative_to or self.folder
            self.add("file", file, node, _resolved(folder / file), False)
            self.add("state", state, node, _resolved(folder / file), False)
        else:
            self.add("state", value, node, self.index.graph_file or self.path, False)

    # A graph file
    def graph(self, root: yaml.Node) -> None:
        self.slots = {k for k, _, _ in _entries(_entry(root, "slots"))}
        self.variables = {k for k, _, _ in _entries(_entry(root, "variables"))}
        states = _entries(_entry(root, "states"))
        for _, _, state in states:
            self.variables.update(k for k, _, _ in _entries(_entry(state, "set")))
            result = _entry(state, "result")
            if isinstance(result, yaml.ScalarNode):
                self.variables.add(str(result.value))
        for name, key, _ in _entries(_entry(root, "slots")):
            self.add("slot", name, key, self.path, True)
        for name, key, _ in _entries(_entry(root, "variables")):
            self.add("variable", name, key, self.path, True)
        self._start(_entry(root, "start"))
        for name, key, state in states:
            self._state(name, key, state)
        for exit_ in _items(_entry(root, "global_exits")):
            self.target(_entry(exit_, "next_state") or exit_)
            for item in _items(_entry(exit_, "except")):
                self.target(item)
        limits = _entry(root, "limits")
        for _, key, _ in _entries(_entry(limits, "max_visits")):
            self.target(key)
        for _, _, value in _entries(_entry(limits, "on_limit")):
            self.target(value)
        for item in _items(_entry(root, "returns")):
            self._named(item)
        for tool in _items(_entry(root, "tools")):
            named = _entry(tool, "name")
            if isinstance(named, yaml.ScalarNode):
                self.add("tool", str(named.value), named, self.path, True)
                handler = _entry(tool, "handler")
                if isinstance(handler, yaml.ScalarNode):
                    self.index.handlers[str(named.value)] = str(handler.value)
        self._topology(_entry(root, "topology"))
        self._templates(root)

    def _start(self, node: yaml.Node | None) -> None:
        if isinstance(node, yaml.ScalarNode):
            self.target(node)
        for entry in _items(node) if isinstance(node, yaml.SequenceNode) else []:
            state = _entry(entry, "state")
            if state is not None:
                self.target(state)

    def _state(self, name: str, key: yaml.Node, state: yaml.Node) -> None:
        kind = _entry(state, "type")
        type_ = str(kind.value) if isinstance(kind, yaml.ScalarNode) else ""
        self.add("state", name, key, self.path, True)
        self.index.states[name] = (type_, self.index.occurrences[-1].span)
        for field_ in _TARGET_KEYS:
            found = _entry(state, field_)
            if found is not None:
                self.target(found)
        for exit_ in _items(_entry(state, "exit_conditions")):
            found = _entry(exit_, "next_state")
            if found is not None:
                self.target(found)
        for field_ in ("collect", "reset"):
            for item in _items(_entry(state, field_)):
                self._named(item)
        for item in _items(_entry(state, "tools")):
            if isinstance(item, yaml.ScalarNode):
                self.add("tool", str(item.value), item, self.path, False)
        tool = _entry(state, "tool")
        if isinstance(tool, yaml.ScalarNode):
            self.add("tool", str(tool.value), tool, self.path, False)
        for variable, set_key, _ in _entries(_entry(state, "set")):
            self.add("variable", variable, set_key, self.path, False)
        result = _entry(state, "result")
        if isinstance(result, yaml.ScalarNode):
            self.add("variable", str(result.value), result, self.path, False)
        self._subgraph(state)

    def _subgraph(self, state: yaml.Node) -> None:
        graph = _entry(state, "graph")
        if not isinstance(graph, yaml.ScalarNode):
            return
        file = _resolved(self.folder / str(graph.value))
        self.add("file", str(graph.value), graph, file, False)
        enter = _entry(state, "enter")
        if isinstance(enter, yaml.ScalarNode):
            self.add("state", str(enter.value), enter, file, False)
        for slot, key, _ in _entries(_entry(state, "with")):
            self.add("slot", slot, key, file, False)

    def _named(self, item: yaml.Node) -> None:
        if isinstance(item, yaml.ScalarNode):
            self.add(self._kind(str(item.value)), str(item.value), item, self.path, False)

    def _kind(self, name: str) -> Kind:
        return "slot" if name in self.slots else "variable"

    def _topology(self, node: yaml.Node | None) -> None:
        if not isinstance(node, yaml.ScalarNode):
            return
        states = set(self.index.states)
        start, end = node.start_mark.index, node.end_mark.index
        for found in _STATE_WORD.finditer(self.text.text, start, end):
            if found.group() in states:
                span = self.text.span(found.start(), found.end())
                symbol = Symbol("state", found.group(), self.path)
                self.index.occurrences.append(Occurrence(symbol, span))

    def _templates(self, root: yaml.Node) -> None:
        """Slot and variable names read by templates and `when:` conditions."""
        known = self.slots | self.variables
        for node, whole in _template_nodes(root):
            start, end = node.start_mark.index, node.end_mark.index
            raw = self.text.text[start:end]
            regions = [(0, len(raw))] if whole else _regions(raw)
            for begin, finish in regions:
                part = _QUOTED.sub(lambda m: " " * len(m.group()), raw[begin:finish])
                for name in _NAME.finditer(part):
                    if name.group() in known:
                        at = start + begin + name.start()
                        span = self.text.span(at, at + len(name.group()))
                        symbol = Symbol(self._kind(name.group()), name.group(), self.path)
                        self.index.occurrences.append(Occurrence(symbol, span))

    def graph_key(self, root: yaml.Node) -> Path | None:
        """A test or sim file's `graph:`, its file resolved."""
        graph = _entry(root, "graph")
        if not isinstance(graph, yaml.ScalarNode):
            return None
        file = _resolved(self.folder / str(graph.value))
        self.index.graph_file = file
        self.add("file", str(graph.value), graph, file, False)
        return file

    # A test file
    def tests(self, root: yaml.Node) -> None:
        file = self.graph_key(root)
        if file is None:
            return
        model = _entry(root, "model")
        for _, key, _ in _entries(_entry(model, "scripted")):
            self.target(key, file.parent)
        slots = _slot_names(file, self.limit)
        self._values(_entry(root, "variables"), slots, file)
        for case in _items(_entry(root, "cases")):
            name = _entry(case, "name")
            if isinstance(name, yaml.ScalarNode):
                span = (case.start_mark.line, case.end_mark.line)
                self.index.cases.append((str(name.value), *span))
            state = _entry(_entry(case, "start"), "state")
            if state is not None:
                self.target(state, file.parent)
            self._values(_entry(_entry(case, "start"), "variables"), slots, file)
            for turn in _items(_entry(case, "turns")):
                expect = _entry(turn, "expect")
                self._values(_entry(expect, "variables"), slots, file)
                for field_ in ("state", "path", "path_includes", "path_excludes", "interrupted"):
                    for item in _items(_entry(expect, field_)):
                        self.target(item, file.parent)

    def _values(self, values: yaml.Node | None, slots: set[str], file: Path) -> None:
        """The names a test file sets or expects values of: the graph's slots or variables."""
        for name, key, _ in _entries(values):
            self.add("slot" if name in slots else "variable", name, key, file, False)

    # A sim file
    def sims(self, root: yaml.Node) -> None:
        """The states a persona's goal and `says:` name, and the slots its facts fill."""
        file = self.graph_key(root)
        if file is None:
            return
        for persona in _items(_entry(root, "personas")):
            goal = _entry(persona, "goal")
            for field_ in ("reach", "never"):
                for item in _items(_entry(goal, field_)):
                    self.target(item, file.parent)
            for _, key, _ in _entries(_entry(persona, "says")):
                self.target(key, file.parent)
            for values in (_entry(persona, "facts"), _entry(goal, "slots")):
                for name, key, _ in _entries(values):
                    self.add("slot", name, key, file, False)


def _slot_names(graph: Path, limit: int) -> set[str]:
    """The slots `graph` declares, as saved (a test file names them among its variables);
    none when it cannot be read as a graph is (a regular file within `limit` bytes)."""
    data = read_file(graph, limit).data
    slots = data.get("slots") if isinstance(data, dict) else None
    return {str(name) for name in slots} if isinstance(slots, dict) else set()


def _template_nodes(root: yaml.Node) -> Iterator[tuple[yaml.ScalarNode, bool]]:
    """Every text that may hold a template, and whether it is an expression whole
    (`when:`); the topology and the states' and slots' own names are not templates."""
    for key, _, value in _entries(root):
        if key in ("topology", "states", "tools"):
            continue
        for node in _scalars(value):
            yield node, False
    for _, _, state in _entries(_entry(root, "states")):
        for key, _, value in _entries(state):
            if key in ("exit_conditions",):
                for exit_ in _items(value):
                    for exit_key, _, part in _entries(exit_):
                        for node in _scalars(part):
                            yield node, exit_key == "when"
            elif key not in ("type", "tool", "graph", "result", "collect", "reset", "tools"):
                for node in _scalars(value):
                    yield node, False
    for exit_ in _items(_entry(root, "global_exits")):
        when = _entry(exit_, "when")
        if isinstance(when, yaml.ScalarNode):
            yield when, True


def _regions(raw: str) -> list[tuple[int, int]]:
    found = []
    for match in _TEMPLATE.finditer(raw):
        group = 1 if match.group(1) is not None else 2
        found.append((match.start(group), match.end(group)))
    return found


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))
