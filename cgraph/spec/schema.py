"""The published JSON Schema, generated from the dataclasses in `cgraph.spec.model`.

`make schema` writes it; a test keeps the shipped copy and the models in step, and
`cgraph.spec.conform` checks graphs against exactly this schema.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, Field, asdict, fields, is_dataclass
from functools import cache
from pathlib import Path
from types import ModuleType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from cgraph.spec.model import key_of

SCHEMA_ID = "https://cgraph.dev/schemas/context-graph.schema.json"


def generate() -> dict[str, Any]:
    """Build the schema from the models (used by `make schema` and the drift test)."""
    from cgraph.spec import model

    return schema_of(model, model.Graph, SCHEMA_ID, "cgraph context graph")


def schema_of(module: ModuleType, root: type, schema_id: str, title: str) -> dict[str, Any]:
    """The JSON Schema of dataclass `root`, its field docstrings read from `module`'s source."""
    import inspect  # generation only: `cgraph lint` reads the shipped schema

    builder = _Builder(_attribute_docs(inspect.getsource(module)))
    body = builder.object_schema(root)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        "$defs": dict(sorted(builder.defs.items())),
        **{k: v for k, v in body.items() if k != "title"},
    }


def marked_schema_of(
    module: ModuleType, root: type, schema_id: str, title: str, key: str, marker: str
) -> dict[str, Any]:
    """`schema_of`, with the version key (`cgraph-test: 1`) that marks a file of this
    kind first and required: how a test or sim file is told from a graph."""
    schema = schema_of(module, root, schema_id, title)
    version = {"const": 1, "type": "integer", "title": key.title(), "description": marker}
    schema["properties"] = {key: version, **schema["properties"]}
    schema["required"] = [key, *schema["required"]]
    return schema


_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class _Builder:
    """Python types of a module's dataclasses → JSON Schema, `$defs` shared."""

    def __init__(self, docs: dict[str, dict[str, str]]) -> None:
        self.docs = docs
        self.defs: dict[str, Any] = {}

    def of(self, tp: Any) -> dict[str, Any]:
        origin, args = get_origin(tp), get_args(tp)
        if origin is Annotated:
            keywords = {k: v for extra in args[1:] for k, v in extra}
            if "discriminator" in keywords:
                return self.tagged(args[0], keywords["discriminator"])
            return {**self.of(args[0]), **keywords}
        if tp is Any:
            return {}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if origin is Literal:
            kind = {"type": _SCALARS[type(args[0])]}
            return {"const": args[0], **kind} if len(args) == 1 else {"enum": list(args), **kind}
        if origin in (Union, UnionType):
            return {"anyOf": [self.of(member) for member in args]}
        if origin is tuple:
            return {"items": self.of(args[0]), "type": "array"}
        if origin is dict:
            names = {k: v for k, v in self.of(args[0]).items() if k != "type"}
            return {
                "additionalProperties": self.of(args[1]),
                **({"propertyNames": names} if names else {}),
                "type": "object",
            }
        if isinstance(tp, type) and is_dataclass(tp):
            return self.ref(tp)
        raise TypeError(f"no JSON Schema for {tp!r}")

    def ref(self, cls: type) -> dict[str, Any]:
        if cls.__name__ not in self.defs:
            self.defs[cls.__name__] = {}  # reserved first: a model may refer to itself
            self.defs[cls.__name__] = self.object_schema(cls)
        return {"$ref": f"#/$defs/{cls.__name__}"}

    def tagged(self, union: Any, tag: str) -> dict[str, Any]:
        """A union told apart by one key (a state's `type`), as editors understand it."""
        members = get_args(union)
        mapping = {get_args(_hints(m)[tag])[0]: self.ref(m)["$ref"] for m in members}
        return {
            "discriminator": {"mapping": dict(sorted(mapping.items())), "propertyName": tag},
            "oneOf": [self.ref(m) for m in members],
        }

    def object_schema(self, cls: type) -> dict[str, Any]:
        hints = _hints(cls)
        properties: dict[str, Any] = {}
        required = []
        for spec in fields(cls):
            if spec.metadata.get("internal"):
                continue
            key = key_of(spec)
            prop = {**self.of(hints[spec.name]), "title": key.replace("_", " ").title()}
            default = _default(spec)
            if spec.default is MISSING and spec.default_factory is MISSING:
                required.append(key)
            elif default is not MISSING:
                prop["default"] = default
            doc = self._doc(cls, spec.name)
            if doc:
                prop["description"] = doc
            properties[key] = prop
        schema: dict[str, Any] = {
            "additionalProperties": False,
            "properties": properties,
            **({"required": required} if required else {}),
            "title": cls.__name__,
            "type": "object",
        }
        doc = self.docs.get(cls.__name__, {}).get("")
        return {**schema, "description": doc} if doc else schema

    def _doc(self, cls: type, name: str) -> str | None:
        for base in cls.__mro__:
            found = self.docs.get(base.__name__, {}).get(name)
            if found:
                return found
        return None


def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


def _default(spec: Field[Any]) -> Any:
    """A field's default as JSON, or MISSING when it has none worth showing."""
    if spec.default is not MISSING:
        value: Any = spec.default
    elif isinstance(spec.default_factory, type) and is_dataclass(spec.default_factory):
        value = asdict(spec.default_factory())
    else:
        return MISSING
    return json.loads(json.dumps(value))  # tuples become lists


def _attribute_docs(source: str) -> dict[str, dict[str, str]]:
    """Class name → field → the docstring written under it ("" holds the class's own)."""
    import ast
    import inspect

    docs: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        own = ast.get_docstring(node)
        if own:
            docs.setdefault(node.name, {})[""] = own
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
def published(name: str = "context-graph.schema.json") -> dict[str, Any]:
    """A schema shipped inside the package (the context graph's, unless `name` says)."""
    # A plain file beside the module: importing `importlib.resources` would cost `cgraph lint`
    # about 1.5% of its start.
    text = (Path(__file__).parent / "data" / name).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(dumps(generate()), end="")
