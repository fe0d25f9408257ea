"""Composed YAML nodes → plain data, by cgraph's rules rather than PyYAML's.

`yes`/`no`/`on`/`off` stay text (a warning says so), true/false keys and duplicate keys
are reported, `<<:` merges may be overridden, and an alias shares its value instead of
being expanded again. Problems are appended to a diagnostics list, never raised.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.spec.limits import MAX_DEPTH, MAX_INT_DIGITS

_TAG = "tag:yaml.org,2002:"
_STR = _TAG + "str"
_MERGE = _TAG + "merge"
_Scalar = yaml.ScalarNode
_SKIP = object()
_Mapping = yaml.MappingNode
# YAML 1.1 booleans that are not true/false: kept as text, because turning a state
# id like `no` or `on` into a boolean silently mangles the graph.
_YAML11_WORDS = frozenset({"yes", "no", "on", "off"})
_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")


class NodeBuilder:
    """Turns composed nodes into plain data, reporting duplicate keys and YAML 1.1 traps."""

    def __init__(self, file: str, diagnostics: list[Diagnostic]) -> None:
        self.file = file
        self.diagnostics = diagnostics
        self.memo: dict[int, Any] = {}
        self.active: set[int] = set()
        self.shared = False
        """Whether an alias shared a value: only then can the data outgrow the text."""

    def build(self, node: yaml.Node) -> Any:
        if node.__class__ is _Scalar:
            # Plain text is most of a graph: skip the tag dispatch for it.
            return node.value if node.tag == _STR else self.scalar(node)
        key = id(node)
        if key in self.memo:  # an alias: share the value, never expand it again
            self.shared = True
            return self.memo[key]
        if key in self.active:
            self.report(
                node, "yaml-recursive", "recursive alias", "an anchor cannot contain itself"
            )
            return None
        if len(self.active) >= MAX_DEPTH:  # `active` holds this node's containers
            self.report(
                node,
                "value-too-large",
                f"lists and mappings are nested more than {MAX_DEPTH} levels deep here",
                "a graph needs only a few levels of nesting; flatten the value",
            )
            return None
        self.active.add(key)
        try:
            value = self.mapping(node) if node.__class__ is _Mapping else self.sequence(node)
        finally:
            self.active.discard(key)
        self.memo[key] = value
        return value

    def sequence(self, node: yaml.Node) -> list[Any]:
        build = self.build
        return [
            child.value if child.__class__ is _Scalar and child.tag == _STR else build(child)
            for child in node.value
        ]

    def mapping(self, node: yaml.Node) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        merged: set[Any] = set()  # keys that came from `<<:`; an explicit key may override them
        build = self.build
        for key_node, value_node in node.value:
            if key_node.__class__ is _Scalar and key_node.tag == _STR:
                key = key_node.value
            elif key_node.tag == _MERGE:
                merged.update(self.merge(result, value_node))
                continue
            else:
                key = self.key(key_node)
                if key is _SKIP:
                    continue
            if key in merged:
                merged.discard(key)
            elif key in result:
                self.duplicate(key_node, key)
            if value_node.__class__ is _Scalar and value_node.tag == _STR:
                result[key] = value_node.value
            else:
                result[key] = build(value_node)
        return result

    def duplicate(self, node: yaml.Node, key: Any) -> None:
        """Report a key written again in one mapping."""
        self.report(
            node,
            "duplicate-key",
            f"duplicate key `{key}`",
            "a later key silently replaces the earlier one; remove or rename one",
        )

    def merge(self, result: dict[Any, Any], node: yaml.Node) -> list[Any]:
        """Add the keys of `<<: *anchor` that are not set yet; return the keys added."""
        added: list[Any] = []
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        for source in sources:
            value = self.build(source)
            if isinstance(value, dict):
                added.extend(k for k in value if k not in result)
                for k, v in value.items():
                    result.setdefault(k, v)
        return added

    def key(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.report(node, "complex-key", "a mapping key must be plain text", "use a text key")
            return _SKIP  # left out of the data, so schema checks do not repeat the problem
        value = self.scalar(node)
        if isinstance(value, bool):
            self.report(
                node,
                "yaml-bool",
                f"key `{node.value}` is read as the boolean {str(value).lower()}",
                f'quote it: "{node.value}"',
            )
            return node.value
        return value if isinstance(value, str | int) else node.value

    def scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag
        value = node.value
        if tag == _STR or node.style:
            return value
        if tag == _TAG + "bool":
            lower = value.lower()
            if lower in _YAML11_WORDS:
                self.report(
                    node,
                    "yaml11-bool",
                    f"`{value}` is a boolean in YAML 1.1 (PyYAML, many editors); "
                    "cgraph reads it as text",
                    f'quote it: "{value}"',
                    severity=Severity.WARNING,
                )
                return value
            return lower == "true"
        if tag == _TAG + "int":
            try:
                return _to_int(value)
            except ValueError:  # over Python's 4,300-digit conversion limit
                self.report(
                    node,
                    "value-too-large",
                    f"this number has more than {MAX_INT_DIGITS:,} digits",
                    "quote it to keep it as text, or use a smaller number",
                )
                return value
        if tag == _TAG + "float":
            try:
                return float(value.replace("_", ""))
            except ValueError:
                return value
        if tag == _TAG + "null":
            return None
        return value

    def report(
        self,
        node: yaml.Node,
        code: str,
        message: str,
        hint: str,
        severity: Severity = Severity.ERROR,
    ) -> None:
        mark = node.start_mark
        self.diagnostics.append(
            Diagnostic(self.file, mark.line + 1, mark.column + 1, severity, code, message, hint)
        )


def _to_int(value: str) -> int | str:
    text = value.replace("_", "")
    if _INT_RE.match(text):
        return int(text)
    try:
        return int(text, 0)
    except ValueError:
        return value
