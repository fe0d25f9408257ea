"""Read YAML (or JSON) into plain data, keeping the node tree for locating diagnostics.

The composed node tree is kept and searched only when a diagnostic needs a position, so
line numbers cost nothing on a clean file and the text is parsed exactly once.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cgraph.diagnostics import Diagnostic, Fix, Severity
from cgraph.spec.files import Refusal, read_bytes
from cgraph.spec.limits import (
    MAX_FILE_BYTES,
    MAX_SCAN_DEPTH,
    MAX_VALUE_CHARS,
    largest_part,
    too_large,
)
from cgraph.spec.yaml_syntax import explain
from cgraph.spec.yaml_values import NodeBuilder

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - libyaml is in every wheel we install
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


@dataclass
class Document:
    """A parsed file: its data (None when unreadable), its nodes and its read problems."""

    file: str
    text: str
    data: Any = None
    root: yaml.Node | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _index: dict[int, dict[Any, tuple[yaml.Node, yaml.Node]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.root is not None

    def locate(self, path: Sequence[str | int], *, key: bool = False) -> tuple[int, int]:
        """Line and column (1-based) of the node at `path`, or of its deepest existing parent.

        With `key=True`, a mapping entry is located at its key rather than its value.
        """
        node = self.root
        if node is None:
            return (1, 1)
        mark_node: yaml.Node = node
        for step in path:
            entry = self._child(node, step)
            if entry is None:
                break
            key_node, node = entry
            mark_node = key_node if key else node
            if key and key_node is node:
                mark_node = node
        mark = mark_node.start_mark
        return (mark.line + 1, mark.column + 1)

    def node_at(self, path: Sequence[str | int]) -> yaml.Node | None:
        """The value node at `path`, or None when the path does not exist."""
        node = self.root
        for step in path:
            if node is None:
                return None
            entry = self._child(node, step)
            node = entry[1] if entry else None
        return node

    def _child(self, node: yaml.Node, step: str | int) -> tuple[yaml.Node, yaml.Node] | None:
        if isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if 0 <= step < len(node.value):
                child = node.value[step]
                return (child, child)
            return None
        if isinstance(node, yaml.MappingNode):
            index = self._index.get(id(node))
            if index is None:
                index = {_scalar_key(k): (k, v) for k, v in node.value}
                self._index[id(node)] = index
            found = index.get(step)
            # An int key (`1:`) is indexed by its text, as the node holds it.
            return found if found is not None or isinstance(step, str) else index.get(str(step))
        return None

    def diag(
        self,
        path: Sequence[str | int],
        code: str,
        message: str,
        hint: str = "",
        *,
        severity: Severity = Severity.ERROR,
        key: bool = False,
        fix: Fix | None = None,
    ) -> Diagnostic:
        line, column = self.locate(path, key=key)
        return Diagnostic(self.file, line, column, severity, code, message, hint, tuple(path), fix)


def _scalar_key(node: yaml.Node) -> Any:
    return node.value if isinstance(node, yaml.ScalarNode) else id(node)


def read_file(path: str | Path, limit: int = MAX_FILE_BYTES) -> Document:
    """Read a graph file; problems become diagnostics, never exceptions. Only a regular
    file of at most `limit` bytes is read (a `ReadLimits.file_size`): see
    `cgraph.spec.files`."""
    name = str(path)
    raw = read_bytes(path, limit)
    if isinstance(raw, Refusal):
        return _failed(name, 1, raw.code, raw.message, raw.hint)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        return _failed(name, line, "encoding", "file is not valid UTF-8", "save the file as UTF-8")
    return read_text(text, name)


def _failed(file: str, line: int, code: str, message: str, hint: str) -> Document:
    """A document that could not be read at all: no text, one error."""
    doc = Document(file, "")
    doc.diagnostics.append(Diagnostic(file, line, 1, Severity.ERROR, code, message, hint))
    return doc


def read_text(text: str, file: str = "<string>") -> Document:
    """Parse YAML text into a `Document`; problems become diagnostics, never exceptions."""
    # The node tree and data are millions of acyclic objects on a big graph; the cyclic
    # garbage collector would re-scan them again and again while they are built.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read(text, file)
    finally:
        if collecting:
            gc.enable()


def _read(text: str, file: str) -> Document:
    doc = Document(file, text)
    if "\t" in text:
        doc.diagnostics.extend(_tab_diagnostics(text, file))
    deep = _too_deep_to_parse(text)
    if deep is not None:
        doc.diagnostics.append(_too_deep(file, *_position(text, deep)))
        return doc
    root = _compose(doc)
    if root is None:
        return doc
    doc.root = root
    builder = NodeBuilder(doc.file, doc.diagnostics)
    try:
        doc.data = builder.build(root)
    except RecursionError:
        doc.root = None
        doc.diagnostics.append(_too_deep(file))
        return doc
    # Aliases share values; expanded, a few lines can stand for gigabytes ("billion
    # laughs"), which every later step (schema check, session snapshot) would walk.
    # Without an alias the data is no larger than its text allows: nothing to count.
    if builder.shared and too_large(doc.data, 2 * len(text) + MAX_VALUE_CHARS):
        doc.diagnostics.append(
            doc.diag(
                largest_part(doc.data),
                "value-too-large",
                f"aliases expand this value beyond {MAX_VALUE_CHARS:,} characters",
                "repeat the value fewer times, or write the part you need out in full",
            )
        )
        doc.root = None  # nothing downstream may see the expanded data
    return doc


# It starts with a literal, which the regex engine scans for quickly (a `^` in MULTILINE
# mode is tried at every character: 10 ms on a 0.5 MB graph).
_BLOCK_DEEP = re.compile(rf"\n[ ?-]{{{MAX_SCAN_DEPTH},}}")
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _too_deep_to_parse(text: str) -> int | None:
    """Where the text nests more than `MAX_SCAN_DEPTH` levels, found before PyYAML's C
    parser, which recurses once a level and crashes the process past ~30,000.

    Counts are upper bounds (a bracket in a quoted string counts too), so no real graph
    comes near them: indentation and `- `/`? ` prefixes for block nesting, unclosed
    brackets for flow nesting.
    """
    found = _BLOCK_DEEP.search("\n" + text)
    if found is not None:
        return found.start()  # the line's start in `text`
    if text.count("[") + text.count("{") < MAX_SCAN_DEPTH:
        return None
    depth = 0
    # Over the brackets alone: a big graph has thousands, each a match object otherwise.
    for number, bracket in enumerate(_NOT_BRACKETS.sub("", text)):
        depth = depth + 1 if bracket in "[{" else max(depth - 1, 0)
        if depth >= MAX_SCAN_DEPTH:
            return _nth_bracket(text, number)
    return None


def _nth_bracket(text: str, number: int) -> int:
    """Where the `number`th (0-based) bracket of `text` is."""
    for seen, found in enumerate(re.finditer(r"[\[\]{}]", text)):
        if seen == number:
            return found.start()
    raise ValueError(number)


def compose(text: str) -> yaml.Node | None:
    """The node tree of YAML text by the loader every read uses; raises `yaml.YAMLError`."""
    return yaml.compose(text, Loader=_Loader)


def _compose(doc: Document) -> yaml.Node | None:
    """The document's node tree, or None with the reason added to its diagnostics."""
    try:
        root = yaml.compose(doc.text, Loader=_Loader)
    except yaml.MarkedYAMLError as err:
        _add_syntax_error(doc, err)
        return None
    except yaml.YAMLError as err:  # unmarked reader errors (e.g. control characters)
        doc.diagnostics.append(_reader_error(doc, err))
        return None
    except RecursionError:
        doc.diagnostics.append(_too_deep(doc.file))
        return None
    if root is None:
        doc.diagnostics.append(
            Diagnostic(
                doc.file,
                1,
                1,
                Severity.ERROR,
                "empty-file",
                "file holds no YAML document",
                "start with `cgraph: 1` and a `name:`",
            )
        )
    return root


def _reader_error(doc: Document, err: yaml.YAMLError) -> Diagnostic:
    position = getattr(err, "position", None)
    line, column = _position(doc.text, position) if isinstance(position, int) else (1, 1)
    return Diagnostic(
        doc.file,
        line,
        column,
        Severity.ERROR,
        "yaml-syntax",
        _one_line(str(err).split("\n")[0]),
        "remove control characters; YAML allows printable Unicode only",
    )


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _too_deep(file: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(
        file,
        line,
        column,
        Severity.ERROR,
        "value-too-large",
        "the file nests lists and mappings too deeply to read",
        "a graph needs only a few levels of nesting; check for runaway brackets",
    )


def _tab_diagnostics(text: str, file: str) -> list[Diagnostic]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent:
            found.append(
                Diagnostic(
                    file,
                    number,
                    indent.index("\t") + 1,
                    Severity.ERROR,
                    "tab-indent",
                    "tab character in indentation",
                    "YAML indents with spaces only; replace the tab",
                )
            )
    return found


def _add_syntax_error(doc: Document, err: yaml.MarkedYAMLError) -> None:
    found = explain(err, doc.text)
    if any(d.code == "tab-indent" and d.line == found.line for d in doc.diagnostics):
        return  # the tab diagnostic already says it better
    message = _one_line(found.message)
    doc.diagnostics.append(
        Diagnostic(
            doc.file, found.line, found.column, Severity.ERROR, "yaml-syntax", message, found.hint
        )
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())
