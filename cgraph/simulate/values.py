"""Slot values a persona gives when its facts name none: the slot's first enum value, a
string its `pattern` accepts, or a plausible value of its type and format."""

from __future__ import annotations

import re
from typing import Any

from cgraph.spec.model import Slot


def made_up(slot: Slot | None) -> Any:
    """A plausible value for a slot no fact gives (None where none can be made)."""
    if slot is None:
        return "yes"
    if slot.type == "array":
        item = made_up(slot.items) if slot.items is not None else None
        return None if item is None else [item]
    if slot.type == "object":
        return {name: made_up(field) for name, field in slot.properties.items()}
    if slot.enum:
        return slot.enum[0]
    if slot.format == "time":
        return "19:00"
    if slot.format == "date":
        return "2026-06-15"
    if slot.type in ("integer", "number"):
        low = slot.minimum if slot.minimum is not None else 1
        high = slot.maximum if slot.maximum is not None else low + 10
        return int(min(max(2, low), high))
    if slot.type == "boolean":
        return True
    if slot.pattern:
        return from_pattern(slot.pattern)
    return "Alex Morgan" if "name" in slot.description.lower() else "yes"


def from_pattern(pattern: str) -> str | None:
    """A short string the regular expression matches, or None for one too clever for this
    (back-references, look-arounds): the fewest repeats, the first alternative, the first
    character of a class — letters spelt from a name, so `[A-Z][a-z]+` reads `Sa`."""
    import re._parser as parser  # sre's own parse tree: no second regex grammar here

    try:
        tree = parser.parse(pattern)
        made = _Spelling().build(tree)
    except (re.error, _Unsupported, RecursionError):
        return None
    return made if re.search(pattern, made) else None


class _Unsupported(Exception):
    pass


class _Spelling:
    """Builds a string from sre's tree; class members spell `samlee…` where they can."""

    def __init__(self) -> None:
        self.drawn = 0

    def build(self, items: Any) -> str:
        return "".join(self.one(str(op), arg) for op, arg in items)

    def one(self, op: str, arg: Any) -> str:
        if op == "LITERAL":
            return chr(arg)
        if op == "NOT_LITERAL":
            return next(c for c in "xyz" if ord(c) != arg)
        if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            return "".join(self.build(arg[2]) for _ in range(arg[0]))
        if op == "SUBPATTERN":
            return self.build(arg[-1])
        if op == "BRANCH":
            return self.build(arg[1][0])
        if op == "IN":
            return self.member(arg)
        if op == "ANY":
            return self.letter(ord("a"), ord("z"))
        if op == "AT":
            return ""
        if op == "CATEGORY":
            return _category(arg)
        raise _Unsupported(op)

    def member(self, members: list[tuple[Any, Any]]) -> str:
        kinds = [str(op) for op, _ in members]
        if "NEGATE" in kinds:
            refused = {chr(a) for o, a in members if str(o) == "LITERAL"}
            return str(next(c for c in "xyz_" if c not in refused))
        wanted = _NAME[self.drawn % len(_NAME)]
        self.drawn += 1
        for letter in (wanted, wanted.upper(), *"0123456789"):
            if any(_holds(str(op), arg, letter) for op, arg in members):
                return str(letter)
        for op, arg in members:
            kind = str(op)
            if kind == "RANGE":
                return chr(int(arg[0]))
            if kind == "LITERAL":
                return chr(int(arg))
            if kind == "CATEGORY":
                return _category(arg)
        raise _Unsupported("IN")

    def letter(self, low: int, high: int) -> str:
        return self.member([("RANGE", (low, high))])


def _holds(kind: str, arg: Any, letter: str) -> bool:
    if kind == "RANGE":
        return bool(arg[0] <= ord(letter) <= arg[1])
    if kind == "LITERAL":
        return bool(arg == ord(letter))
    return False


_NAME = "samleejones"


def _category(arg: Any) -> str:
    name = str(arg)
    if "DIGIT" in name:
        return "0" if "NOT" in name else "7"
    if "SPACE" in name:
        return "a" if "NOT" in name else " "
    return "-" if "NOT" in name else "s"
