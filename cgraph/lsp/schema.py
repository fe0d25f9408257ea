"""The published schemas, walked to the part a cursor is in: the keys a mapping allows,
the values a key takes, and what the schema says of each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cgraph.lsp.cursor import ITEM
from cgraph.lsp.index import FileKind
from cgraph.spec import simfile, testfile
from cgraph.spec.schema import published

Schema = dict[str, Any]


def root(kind: FileKind) -> Schema:
    """The schema of a graph, test or sim file."""
    if kind == "graph":
        return published()
    return published(testfile.SCHEMA_NAME if kind == "test" else simfile.SCHEMA_NAME)


def at(schema: Schema, path: Sequence[str], types: dict[str, str]) -> Schema | None:
    """The schema of the value at `path` (keys, `-` for a list's item); `types` gives a
    state's type, which picks its branch of the `states` schema."""
    defs = schema.get("$defs", {})
    node: Schema | None = schema
    for step in path:
        if node is None:
            return None
        node = _resolve(node, defs, want_list=step == ITEM)
        if step == ITEM:
            items = node.get("items")
            node = items if isinstance(items, dict) else None
            continue
        properties = node.get("properties", {})
        if step in properties:
            node = properties[step]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
            if "discriminator" in node:
                node = _branch(node, types.get(step, ""))
        else:
            return None
    return _resolve(node, defs, want_list=False) if node is not None else None


def properties(schema: Schema | None, whole: Schema) -> dict[str, Schema]:
    """The keys a mapping's schema allows, each with its own schema."""
    if schema is None:
        return {}
    node = _resolve(schema, whole.get("$defs", {}), want_list=False)
    found = node.get("properties", {})
    return found if isinstance(found, dict) else {}


def values(schema: Schema | None, whole: Schema) -> list[str]:
    """The values an `enum` (or a `Literal`) allows; booleans as YAML writes them."""
    if schema is None:
        return []
    node = _resolve(schema, whole.get("$defs", {}), want_list=False)
    options = [b for b in node.get("anyOf", []) if isinstance(b, dict)] or [node]
    found: list[str] = []
    for option in options:
        for value in option.get("enum", ([option["const"]] if "const" in option else [])):
            found.append(str(value).lower() if isinstance(value, bool) else str(value))
        if option.get("type") == "boolean":
            found.extend(["true", "false"])
    return list(dict.fromkeys(found))


def describe(schema: Schema | None) -> str:
    return str(schema.get("description", "")) if schema else ""


def _branch(node: Schema, state_type: str) -> Schema:
    mapping = node["discriminator"].get("mapping", {})
    ref = mapping.get(state_type)
    return {"$ref": ref} if ref else node


def _resolve(node: Schema, defs: dict[str, Any], *, want_list: bool) -> Schema:
    """Through `$ref` and `anyOf`/`oneOf` to the branch a step can go into."""
    for _ in range(8):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = defs.get(ref.rsplit("/", 1)[1], {})
            continue
        branches = node.get("anyOf") or ([] if "discriminator" in node else node.get("oneOf"))
        if not branches:
            return node
        wanted = "array" if want_list else "object"
        pick = next((b for b in branches if b.get("type") == wanted or "$ref" in b), None)
        if pick is None:
            return node
        if "description" in node and "description" not in pick:
            pick = {**pick, "description": node["description"]}
        node = pick
    return node
