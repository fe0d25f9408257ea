"""Slots: typed variables. What a value must be, and the JSON Schema a model fills in.

One rule for lint (a slot's `default`), the runtime (a value the model or an extractor
found, a `set:` that writes a slot) and the answer schema of a collecting state.
"""

from __future__ import annotations

import re
from datetime import date, time
from typing import Any

from cgraph.spec.model import Slot

_PYTHON = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def problem(slot: Slot, value: Any) -> str | None:
    """Why `value` does not fit the slot, or None when it does (None itself is "unset")."""
    if value is None:
        return None
    if (
        isinstance(value, bool) is not (slot.type == "boolean")
        or type(value) not in _PYTHON[slot.type]
    ):
        return f"`{value!r}` is not {_WORDS[slot.type]}"
    return _keyword_problem(slot, value)


def _keyword_problem(slot: Slot, value: Any) -> str | None:
    if slot.enum and value not in slot.enum:
        return f"`{value}` is not one of {', '.join(map(str, slot.enum))}"
    if slot.minimum is not None and value < slot.minimum:
        return f"`{value}` is below the minimum {_number(slot.minimum)}"
    if slot.maximum is not None and value > slot.maximum:
        return f"`{value}` is above the maximum {_number(slot.maximum)}"
    if slot.pattern is not None and not re.search(slot.pattern, value):
        return f"`{value}` does not match `{slot.pattern}`"
    if slot.format is not None and not _formatted(slot.format, value):
        return f"`{value}` is not a {slot.format} ({_FORMATS[slot.format]})"
    return None


def normalised(slot: Slot, value: Any) -> Any:
    """A value as the slot keeps it: `4.0` on an integer slot is 4 (JSON has one number),
    and a whole number on a number slot is whole too, so `{{ amount }} euros` says "450
    euros", not "450.0 euros"."""
    if slot.type in ("integer", "number") and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def answer_schema(slot: Slot) -> dict[str, Any]:
    """The slot as a nullable JSON Schema property (null: the message does not say it)."""
    schema: dict[str, Any] = {"type": [slot.type, "null"]}
    if slot.enum:
        schema["enum"] = [*slot.enum, None]
    for key in ("minimum", "maximum", "pattern", "format"):
        value = getattr(slot, key)
        if value is not None:
            schema[key] = value
    if slot.description:
        schema["description"] = slot.description
    return schema


_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}
_FORMATS = {"date": "YYYY-MM-DD", "time": "HH:MM"}


def _formatted(kind: str, value: str) -> bool:
    try:
        (date if kind == "date" else time).fromisoformat(value)
    except ValueError:
        return False
    return True


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def from_answer_schema(schema: dict[str, Any]) -> Slot:
    """The slot a nullable answer schema describes (the inverse of `answer_schema`)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return Slot(
        type=next(t for t in kinds if t != "null"),
        enum=tuple(v for v in schema.get("enum", ()) if v is not None),
        minimum=schema.get("minimum"),
        maximum=schema.get("maximum"),
        pattern=schema.get("pattern"),
        format=schema.get("format"),
        description=schema.get("description", ""),
    )


def never_filled(slot: Slot) -> bool:
    """A free-text slot (no `enum`, `pattern` or `format`): no extractor reads it."""
    return slot.type == "string" and not (slot.enum or slot.pattern or slot.format)
