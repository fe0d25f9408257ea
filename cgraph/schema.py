"""The published JSON Schema, generated from the models so the two never drift."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_ID = "https://cgraph.dev/schemas/context-graph.schema.json"


def generate() -> dict[str, Any]:
    """Build the schema from the models (used by `make schema` and the drift test)."""
    from cgraph.model import Graph

    body = Graph.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "cgraph context graph",
        **{k: v for k, v in body.items() if k != "title"},
    }


@cache
def published() -> dict[str, Any]:
    """The schema shipped inside the package."""
    text = resources.files("cgraph").joinpath("data/context-graph.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(dumps(generate()), end="")
