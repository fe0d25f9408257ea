"""Slots: typed variables. What a value must be, and the JSON Schema a model fills in.

One rule for lint (a slot's `default`), the runtime (a value the model or an extractor
found, a `set:` that writes a slot) and the answer schema of a collecting state.
"""

from __future__ import annotations

import re
from datetime import date, time
from typing import Any

from cgraph.spec.model import Slot

_PYTHON = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def problem(slot: Slot, value: Any) -> str | None:
    """Why `value` does not fit the slot, or None when it does (None itself is "unset").
    A list or a record is checked item by item and field by field, and the first problem
    is named where it is ("item 2: `dosage` is missing")."""
    if value is None:
        return None
    if (
        isinstance(value, bool) is not (slot.type == "boolean")
        or type(value) not in _PYTHON[slot.type]
    ):
        return f"`{_shown(value)}` is not {_WORDS[slot.type]}"
    if slot.type == "array":
        return _items_problem(slot, value)
    if slot.type == "object":
        return _record_problem(slot, value)
    return _keyword_problem(slot, value)


def _items_problem(slot: Slot, value: Any) -> str | None:
    refused = item_problems(slot, value)
    return refused[0] if refused else None


def item_problems(slot: Slot, value: Any) -> list[str]:
    """What is wrong with each item of a list that its `items` refuses, the item named
    by its number and, for a record, the first field it gives ("item 2 (vitamin D):
    `dosage` is missing")."""
    if slot.items is None:
        return []
    said = []
    for number, item in enumerate(value, 1):
        found = "it is empty" if item is None else problem(slot.items, item)
        if found is not None:
            said.append(f"item {number}{_named(item)}: {found}")
    return said


def valid_items(slot: Slot, value: Any) -> list[Any]:
    """The items of a list its `items` accepts (a list is kept in part: what was given
    right is not asked for again)."""
    if slot.items is None:
        return list(value)
    return [v for v in value if v is not None and problem(slot.items, v) is None]


def _named(item: Any) -> str:
    if isinstance(item, dict):
        first = next((v for v in item.values() if v is not None), None)
        return f" ({first})" if first is not None else ""
    return ""


def _record_problem(slot: Slot, value: dict[str, Any]) -> str | None:
    for name in slot.required:
        if value.get(name) is None:
            return f"`{name}` is missing"
    for name, field_value in value.items():
        field_slot = slot.properties.get(name)
        if field_slot is None:
            if slot.properties:
                return f"`{name}` is not one of its fields ({', '.join(slot.properties)})"
            continue
        found = problem(field_slot, field_value)
        if found is not None:
            return f"`{name}`: {found}"
    return None


def _shown(value: Any) -> str:
    """A wrong value as a message quotes it: a scalar as written, a list or a mapping by
    its kind (a whole record is no help in one line)."""
    return type(value).__name__ if isinstance(value, list | tuple | dict) else repr(value)


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
    euros", not "450.0 euros". A list is a list (JSON's tuple), its items and a record's
    fields kept the same way; an empty list is "not said" (null), and so is a record
    whose fields are all null."""
    if slot.type in ("integer", "number") and isinstance(value, float) and value.is_integer():
        return int(value)
    if slot.type == "array" and isinstance(value, list | tuple):
        items = [value if slot.items is None else normalised(slot.items, v) for v in value]
        kept = [v for v in items if v is not None]
        return kept or None
    if slot.type == "object" and isinstance(value, dict):
        # Every field is there (null when not given), so a template or a `when:` may read
        # `item.dosage` of any record.
        given = {**dict.fromkeys(slot.properties), **value}
        record = {
            k: normalised(slot.properties[k], v) if k in slot.properties else v
            for k, v in given.items()
        }
        return record if any(v is not None for v in record.values()) else None
    return value


def answer_schema(slot: Slot) -> dict[str, Any]:
    """The slot as a nullable JSON Schema property (null: the message does not say it).
    Strict-mode compatible all the way down: a record's fields are all `required`, the
    optional ones nullable, and no other field is allowed."""
    schema = _schema(slot)
    schema["type"] = [slot.type, "null"]
    if slot.enum:
        schema["enum"] = [*slot.enum, None]
    return schema


def _schema(slot: Slot) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": slot.type}
    if slot.enum:
        schema["enum"] = list(slot.enum)
    for key in ("minimum", "maximum", "pattern", "format"):
        value = getattr(slot, key)
        if value is not None:
            schema[key] = value
    if slot.type == "array" and slot.items is not None:
        schema["items"] = _schema(slot.items)
    if slot.type == "object":
        schema["properties"] = {
            name: _schema(field) if name in slot.required else answer_schema(field)
            for name, field in slot.properties.items()
        }
        schema["required"] = list(slot.properties)
        schema["additionalProperties"] = False
    if slot.description:
        schema["description"] = slot.description
    return schema


_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a record (a mapping of fields)",
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
    """The slot a nullable answer schema describes (the inverse of `answer_schema`): a
    record's required fields are the ones that may not be null."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    properties = {k: from_answer_schema(v) for k, v in schema.get("properties", {}).items()}
    required = tuple(k for k, v in schema.get("properties", {}).items() if not _nullable(v))
    items = schema.get("items")
    return Slot(
        type=next(t for t in kinds if t != "null"),
        items=from_answer_schema(items) if items else None,
        properties=properties,
        required=required,
        enum=tuple(v for v in schema.get("enum", ()) if v is not None),
        minimum=schema.get("minimum"),
        maximum=schema.get("maximum"),
        pattern=schema.get("pattern"),
        format=schema.get("format"),
        description=schema.get("description", ""),
    )


def shape(schema: dict[str, Any]) -> str:
    """A list's or a record's shape in words, for a prompt ("a list of records (medication,
    dosage, frequency; medication and dosage required)"); "" for a plain slot."""
    slot = from_answer_schema(schema)
    if slot.type == "object":
        return f"a record {_fields(slot)}"
    if slot.type != "array" or slot.items is None:
        return ""
    if slot.items.type == "object":
        return f"a list of records {_fields(slot.items)}"
    values = f", each one of {', '.join(map(str, slot.items.enum))}" if slot.items.enum else ""
    return f"a list of {slot.items.type} values{values}"


def _fields(slot: Slot) -> str:
    required = " and ".join(slot.required)
    tail = f"; {required} required" if required else ""
    return f"({', '.join(slot.properties)}{tail})"


def _nullable(schema: dict[str, Any]) -> bool:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return "null" in kinds


def never_filled(slot: Slot) -> bool:
    """A free-text slot (no `enum`, `pattern` or `format`): no extractor reads it; a list
    of such items, or a record of such fields, neither."""
    if slot.type == "array":
        return slot.items is None or never_filled(slot.items)
    if slot.type == "object":
        return all(never_filled(field) for field in slot.properties.values())
    return slot.type == "string" and not (slot.enum or slot.pattern or slot.format)
