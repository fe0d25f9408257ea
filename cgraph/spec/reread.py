"""Reading a graph again after an edit, reusing the parts of it that did not change.

An editor sends the whole text after each keystroke, and most of a big graph's lint time
is composing and building its YAML. `Rereader.read` cuts the text at its top-level keys
and at each state under `states:`, reads only the parts whose text (and first line) it
has not read before, and joins them into the `Document` that `read_text` would give:
the same data, the same diagnostics, node marks on the same lines and columns.

Only what cuts cleanly is cut. A text with anchors or aliases, tags, tabs, directives or
document markers, or whose parts do not each read as a mapping (an unclosed quote or
bracket across a cut), is read whole by `read_text`, which also words its errors.
Marks of reused nodes keep their line and column; their `index` counts from the part's
own start, so nothing may slice the text with it (lint locates by line and column).
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass
from itertools import pairwise

import yaml

from cgraph.diagnostics import Diagnostic
from cgraph.spec.read import Document, _too_deep_to_parse, compose, read_text
from cgraph.spec.yaml_values import NodeBuilder

# Each pattern starts with a literal or a small set, which the regex engine scans for
# quickly; a `^` in MULTILINE mode would be tried at every character.
_MARKERS = re.compile(r"\n(?:---|\.\.\.|%|\?|[ ]*<<[ ]*:)")
"""Document markers, directives, `?` keys and merge keys: read whole."""
_NODE_PROPERTY = re.compile(r"[&*!]\S")
"""An anchor, alias or tag (when it starts a token): read whole."""
_TOKEN_BEFORE = frozenset(" \n[{,:?-")
_TOP_KEY = re.compile(r"\n(?=[^\s#\-\[{?])")
_STATES = re.compile(r"\nstates:[ ]*(?:#[^\n]*)?(?=\n)")
_MAPPING = "tag:yaml.org,2002:map"


@dataclass(frozen=True, slots=True)
class _Part:
    pairs: list[tuple[yaml.Node, yaml.Node]]
    keys: list[object]
    """Each pair's key as the data holds it."""
    data: dict[object, object]
    diagnostics: list[Diagnostic]


class Rereader:
    """Reads of files, each reusing the parts of the same file's previous read that are
    unchanged (only the last read's parts are kept, per file)."""

    def __init__(self) -> None:
        self._parts: dict[str, dict[tuple[str, int], _Part]] = {}

    def read(self, text: str, file: str) -> Document:
        """`read_text(text, file)`, from the parts of the last read where they still fit."""
        collecting = gc.isenabled()
        gc.disable()  # as read_text: big acyclic trees
        try:
            joined = self._read(text, file)
        finally:
            if collecting:
                gc.enable()
        if joined is None:
            self._parts.pop(file, None)
            return read_text(text, file)
        return joined

    def forget(self, file: str) -> None:
        """Drop what was kept of a file (closed in the editor)."""
        self._parts.pop(file, None)

    def _read(self, text: str, file: str) -> Document | None:
        cuts = _cuts(text)
        if cuts is None:
            return None
        known = self._parts.get(file, {})
        parts: dict[tuple[str, int], _Part] = {}
        top: list[_Part] = []
        states: list[_Part] = []
        for start, end, line, in_states in cuts:
            key = (text[start:end], line)
            part = known.get(key) or parts.get(key)
            if part is None:
                part = _read_part(key[0], line, file, in_states)
                if part is None:
                    return None
            parts[key] = part
            (states if in_states else top).append(part)
        self._parts[file] = parts
        return _joined(text, file, top, states)


def _cuts(text: str) -> list[tuple[int, int, int, bool]] | None:
    """(start, end, first line, whether a state) of each part, or None: read it whole."""
    lined = "\n" + text + "\n"  # offsets in `lined` past a newline are offsets in `text`
    if not _cuttable(text, lined):
        return None
    starts = [m.start() for m in _TOP_KEY.finditer(lined)]
    if not starts:
        return None
    starts[0] = 0  # a leading comment belongs to the first part
    headers = list(_STATES.finditer(lined))
    if len(headers) > 1:
        return None
    header = headers[0].start() if headers else -1
    found: list[tuple[int, int, bool]] = []
    for start, end in pairwise([*starts, len(text)]):
        if start != header:
            found.append((start, end, False))
            continue
        body = text.find("\n", start) + 1 or end
        found.append((start, body, False))
        found.extend(_state_cuts(lined, body, end))
    lines, at, line = [], 0, 0
    for start, end, in_states in found:
        line += text.count("\n", at, start)
        at = start
        lines.append((start, end, line, in_states))
    return lines


def _cuttable(text: str, lined: str) -> bool:
    if "\t" in text or _MARKERS.search(lined):
        return False
    return not any(
        m.start() == 0 or text[m.start() - 1] in _TOKEN_BEFORE
        for m in _NODE_PROPERTY.finditer(text)
    )


def _state_cuts(lined: str, start: int, end: int) -> list[tuple[int, int, bool]]:
    """The states under `states:`, each from its key to the next state's key (offsets as
    in `_cuts`: `lined[i + 1]` is `text[i]`)."""
    first = re.compile(r"\n( +)(?=[^\s#\-])").search(lined, start, end)
    if first is None:
        return [(start, end, False)] if start < end else []
    step = re.compile(rf"\n {{{len(first.group(1))}}}(?=[^\s#\-])")
    keys = [m.start() for m in step.finditer(lined, first.start(), end)]
    keys[0] = start  # comments above the first state are part of it
    return [(a, b, True) for a, b in pairwise([*keys, end])]


def _read_part(text: str, line: int, file: str, in_states: bool) -> _Part | None:
    """One part read on its own, its marks moved down to its first line."""
    if _too_deep_to_parse(text) is not None:  # libyaml would crash; a whole read says where
        return None
    try:
        root = compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    if root is None:
        return _Part([], [], {}, [])
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        return None
    _move(root, line)
    diagnostics: list[Diagnostic] = []
    builder = NodeBuilder(file, diagnostics)
    if in_states:
        builder.active.add(-1)  # nested one deeper than its own root: `states:`
    data = builder.build(root)
    if builder.shared or not isinstance(data, dict):
        return None
    keys = [NodeBuilder(file, []).key(k) for k, _ in root.value]
    return _Part(list(root.value), keys, data, diagnostics)


def _move(root: yaml.Node, lines: int) -> None:
    """Every mark of the node tree `lines` further down. libyaml's marks are read-only, so
    each is replaced by a moved copy (once: nodes share marks)."""
    if not lines:
        return
    moved: dict[int, yaml.Mark] = {}

    def down(mark: yaml.Mark) -> yaml.Mark:
        copy = moved.get(id(mark))
        if copy is None:
            copy = yaml.Mark(mark.name, mark.index, mark.line + lines, mark.column, None, 0)
            moved[id(mark)] = copy
        return copy

    todo = [root]
    while todo:
        node = todo.pop()
        node.start_mark = down(node.start_mark)
        node.end_mark = down(node.end_mark)
        if isinstance(node, yaml.MappingNode):
            todo.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)


def _joined(text: str, file: str, top: list[_Part], states: list[_Part]) -> Document | None:
    doc = Document(file, text)
    builder = NodeBuilder(file, doc.diagnostics)
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    data: dict[object, object] = {}
    for part in top:
        doc.diagnostics.extend(part.diagnostics)
        _merge(builder, pairs, data, part)
    if states:
        states_node, states_data = _states(builder, doc, states)
        at = next((i for i, (k, _) in enumerate(pairs) if k.value == "states"), None)
        if at is None:
            return None
        pairs[at] = (pairs[at][0], states_node)
        data["states"] = states_data
    if not pairs:
        return None
    doc.root = yaml.MappingNode(_MAPPING, pairs, pairs[0][0].start_mark, pairs[-1][1].end_mark)
    doc.data = data
    return doc


def _states(
    builder: NodeBuilder, doc: Document, states: list[_Part]
) -> tuple[yaml.Node, dict[object, object]]:
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    data: dict[object, object] = {}
    for part in states:
        doc.diagnostics.extend(part.diagnostics)
        _merge(builder, pairs, data, part)
    start = pairs[0][0].start_mark if pairs else None
    end = pairs[-1][1].end_mark if pairs else None
    return yaml.MappingNode(_MAPPING, pairs, start, end), data


def _merge(
    builder: NodeBuilder,
    pairs: list[tuple[yaml.Node, yaml.Node]],
    data: dict[object, object],
    part: _Part,
) -> None:
    """A part's entries after those before it: a key written twice is reported as a whole
    read reports it (within one part, its own read did)."""
    pairs.extend(part.pairs)
    for (key_node, _), key in zip(part.pairs, part.keys, strict=True):
        if key in data:
            builder.duplicate(key_node, key)
    data.update(part.data)
