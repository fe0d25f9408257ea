"""Lists and records from a message without a language model.

"lisinopril 10 mg once a day and vitamin D" is two records of a list: the message is cut
where items are separated (a comma, "and", "also", "plus"; never inside a value named),
each piece gives the fields it names (an enum value, a `pattern` match, a number), and a
piece that names only fields the record before it lacks ("lisinopril, 10 mg, once a
day") completes that record instead of starting one. A list of plain items takes every
enum value named, every pattern match or every number, in the order said. Fields no
extractor reads stay null: the runtime asks for a required one rather than guessing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cgraph.spec.model import Slot

_SEPARATOR = re.compile(r"\s*(?:[,;\n]|\band\b|\balso\b|\bplus\b|\bas well as\b)\s*", re.I)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
Found = tuple[int, int, Any]
"""(start, end, value) of one value named in the message."""


def read(slot: Slot, message: str) -> Any:
    """The list (or the record) `message` gives for `slot`, or None when it names none."""
    if slot.type == "object":
        found = _records(slot, message)
        return found[0] if found else None
    items = slot.items
    if items is None:
        return None
    if items.type == "object":
        return _records(items, message) or None
    values = [value for _, _, value in sorted(_matches(items, message))]
    return list(dict.fromkeys(values)) or None


def _matches(slot: Slot, text: str) -> Iterator[Found]:
    """Every value of a plain (scalar) slot named in `text`, where it is."""
    if slot.enum:
        lowered = text.casefold()
        for value in slot.enum:
            words = re.escape(str(value).casefold().replace("_", " "))
            for match in re.finditer(rf"\b{words}\b", lowered):
                yield match.start(), match.end(), value
    elif slot.type == "string" and slot.pattern and not slot.format:
        for match in re.finditer(slot.pattern.lstrip("^").rstrip("$"), text):
            yield match.start(), match.end(), match.group()
    elif slot.type in ("integer", "number"):
        for match in _NUMBER.finditer(text):
            number = float(match.group())
            if slot.type == "number" or number.is_integer():
                yield match.start(), match.end(), int(number) if number.is_integer() else number


def _records(slot: Slot, message: str) -> list[dict[str, Any]]:
    """The records `message` gives, in order, each with every field (null when not said)."""
    named: list[tuple[int, int, str, Any]] = []
    taken = list(message)
    # Enums and patterns first, numbers last: the 10 of "10 mg" belongs to the dosage.
    fields = sorted(slot.properties.items(), key=lambda item: item[1].type in _NUMBERS)
    for name, field in fields:
        for start, end, value in _matches(field, "".join(taken)):
            if any(c == "\0" for c in taken[start:end]):
                continue
            named.append((start, end, name, value))
            taken[start:end] = "\0" * (end - start)
    cuts = [m.start() for m in _SEPARATOR.finditer("".join(taken)) if "\0" not in m.group()]
    key = slot.required[0] if slot.required else next(iter(slot.properties), "")
    records: list[dict[str, Any]] = []
    for piece in _pieces(sorted(named), cuts):
        last = records[-1] if records else None
        fresh = key in piece or last is None or any(last[k] is not None for k in piece)
        if fresh:
            records.append({name: None for name in slot.properties})
        for name, value in piece.items():
            records[-1][name] = value
    return records


def _pieces(named: list[tuple[int, int, str, Any]], cuts: list[int]) -> Iterator[dict[str, Any]]:
    """The fields named between two cuts, one mapping per piece that names any (the
    first value of a field in a piece is its value)."""
    piece: dict[str, Any] = {}
    bounds = iter([*cuts, len(named) and named[-1][1] + 1])
    bound = next(bounds)
    for start, _, name, value in named:
        while start >= bound:
            if piece:
                yield piece
            piece, bound = {}, next(bounds)
        piece.setdefault(name, value)
    if piece:
        yield piece


_NUMBERS = ("integer", "number")
