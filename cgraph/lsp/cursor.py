"""What the cursor is on, read from the buffer's lines (which, mid-edit, are rarely valid
YAML): the keys from the root down to it, the key whose value it is typing, and whether it
is inside a template or a block of text such as the topology."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Mode = Literal["key", "value", "item", "template", "block"]
ITEM = "-"
"""A path step into a list's item."""
_LINE = re.compile(r"^(?P<indent>\s*)(?P<dashes>(?:-\s+)*)(?P<rest>.*)$")
_KEY = re.compile(r"""^(?P<key>[A-Za-z_][\w.\-]*|"[^"]*"|'[^']*')\s*:(?:\s+|$)(?P<value>.*)$""")
_WORD_END = re.compile(r"[\w.\-#/]*$")
_NAME_END = re.compile(r"[A-Za-z_]\w*$|$")
_BLOCK = re.compile(r"^[|>][+-]?\d*\s*(#.*)?$")
# The key being typed in an open flow mapping: `goal: {reach: [a, b` → `reach`.
_FLOW_KEY = re.compile(r"([A-Za-z_][\w.\-]*)\s*:\s*(?:\[[^\[\]{}]*|[^\[\]{},:]*)$")


@dataclass(frozen=True, slots=True)
class Cursor:
    mode: Mode
    path: tuple[str, ...]
    """The keys from the root to the mapping (or list, `-`) the cursor is in."""
    key: str = ""
    """In a value or a list item: the key it belongs to."""
    word: str = ""
    """What is typed of the word under completion, up to the cursor."""
    indent: int = 0
    """The column keys at the cursor's level start at."""

    @property
    def state(self) -> str | None:
        """The state the cursor is in, when it is in one."""
        return self.path[1] if len(self.path) > 1 and self.path[0] == "states" else None


@dataclass(frozen=True, slots=True)
class _Line:
    indent: int
    dash: int | None
    """The column of the last `- ` of the line, if it starts with any."""
    key: str | None
    key_column: int
    value: str


def _parse(text: str) -> _Line | None:
    if not text.strip() or text.lstrip().startswith("#"):
        return None
    found = _LINE.match(text)
    assert found is not None  # the pattern matches any line
    indent = len(found["indent"])
    dashes = found["dashes"]
    dash = indent + len(dashes.rstrip()) - 1 if dashes else None
    column = indent + len(dashes)
    key = _KEY.match(found["rest"])
    if key is None:
        return _Line(indent, dash, None, column, found["rest"])
    return _Line(indent, dash, key["key"].strip("\"'"), column, key["value"])


def at(text: str, line: int, column: int) -> Cursor:
    """The cursor at 0-based `line` and `column` of `text`."""
    lines = text.split("\n")
    current = lines[line] if line < len(lines) else ""
    before = current[:column]
    parents, block = _parents(lines, line, before)
    if block is not None:
        word = _NAME_END.search(before)
        return Cursor("block", parents, block, word.group() if word else "")
    template = _template_word(before)
    parsed = _parse(before) or _Line(len(before) - len(before.lstrip()), None, None, 0, "")
    if template is not None:
        into = (ITEM,) if parsed.dash is not None else ()
        return Cursor("template", (*parents, *into), parsed.key or "", template)
    if parsed.key is not None:
        value = parsed.value
        word = _WORD_END.search(value)
        typed = word.group() if word else ""
        mode: Mode = "item" if re.search(r"\[[^\]]*$", value) else "value"
        into = (ITEM,) if parsed.dash is not None else ()
        keys = (parsed.key, *_flow_key(value))
        return Cursor(mode, (*parents, *into, *keys), keys[-1], typed, parsed.key_column)
    word = _WORD_END.search(before)
    typed = word.group() if word else ""
    if parsed.dash is not None and parents:
        return Cursor("item", (*parents, ITEM), parents[-1], typed, parsed.key_column)
    return Cursor("key", parents, "", typed, parsed.key_column)


def _flow_key(value: str) -> tuple[str, ...]:
    """The key typed in the innermost flow mapping still open in `value`, if any."""
    opened: list[int] = []
    for index, char in enumerate(value):
        if char == "{":
            opened.append(index)
        elif char == "}" and opened:
            opened.pop()
    if not opened:
        return ()
    found = _FLOW_KEY.search(value, opened[-1] + 1)
    return (found.group(1),) if found else ()


def _template_word(before: str) -> str | None:
    """The name being typed inside an open `{{` or `{%`, else None."""
    opened = max(before.rfind("{{"), before.rfind("{%"))
    closed = max(before.rfind("}}"), before.rfind("%}"))
    if opened < 0 or closed > opened:
        return None
    found = _NAME_END.search(before[opened + 2 :])
    return found.group() if found else ""


def _parents(lines: list[str], line: int, before: str) -> tuple[tuple[str, ...], str | None]:
    """The keys above the cursor's line (by indentation) and, when the cursor is inside a
    block of text (`topology: |`), that block's key."""
    this = _parse(before)
    if this is None:  # a blank line: the cursor's column is the level being typed at
        threshold = len(before) - len(before.lstrip(" "))
    else:
        threshold = this.dash if this.dash is not None else this.indent
    path: list[str] = []
    block: str | None = None
    for text in reversed(lines[:line]):
        if threshold == 0:
            break
        parsed = _parse(text)
        if parsed is None:
            continue
        if parsed.key is not None and parsed.key_column < threshold:
            if not path and _BLOCK.match(parsed.value.strip()):
                block = parsed.key
            path.append(parsed.key)
            threshold = parsed.key_column
            if parsed.dash is not None:
                path.append(ITEM)
                threshold = parsed.dash
        elif parsed.dash is not None and parsed.dash < threshold:
            path.append(ITEM)
            threshold = parsed.dash
    return tuple(reversed(path)), block
