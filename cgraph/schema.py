"""The published JSON Schema, generated from the models so the two never drift."""

from __future__ import annotations

import ast
import inspect
import json
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_ID = "https://cgraph.dev/schemas/context-graph.schema.json"


def generate() -> dict[str, Any]:
    """Build the schema from the models (used by `make schema` and the drift test)."""
    from cgraph.model import Graph

    body = Graph.model_json_schema(mode="validation")
    _add_descriptions(body)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "cgraph context graph",
        **{k: v for k, v in body.items() if k != "title"},
    }


def _add_descriptions(body: dict[str, Any]) -> None:
    """Give every property the docstring written under its field in `cgraph.model`.

    Done here, not with pydantic's `use_attribute_docstrings`, because that re-reads the
    module's source on every import and doubles the cold start of `cgraph lint`.
    """
    from cgraph import model

    docs = _attribute_docs(inspect.getsource(model))
    schemas = {"Graph": body, **body.get("$defs", {})}
    for name, schema in schemas.items():
        cls = getattr(model, name, None)
        for base in reversed(cls.__mro__ if isinstance(cls, type) else ()):
            for field, doc in docs.get(base.__name__, {}).items():
                prop = schema.get("properties", {}).get(field)
                if prop is not None:
                    prop["description"] = doc


def _attribute_docs(source: str) -> dict[str, dict[str, str]]:
    docs: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for field, doc in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                docs.setdefault(node.name, {})[field.target.id] = inspect.cleandoc(doc.value.value)
    return docs


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
