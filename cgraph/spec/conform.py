"""Check read data against the published JSON Schema, building the model as it goes.

`cgraph lint` and `load_graph` both come through here, so a graph is valid exactly when
the schema an editor uses says so. The schema is compiled once into small closures, one
per node, each checking a value and returning it built: a `$ref` to a model becomes that
dataclass, an array a tuple. Every problem is collected (never raised) as a `Violation`;
`cgraph.spec.load` words them for designers.

Only the keywords `cgraph.spec.schema` generates are understood. Compiling anything else is a
`ValueError`, so the generator and this checker cannot drift apart silently.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache, partial
from types import ModuleType
from typing import Any

from cgraph.diagnostics import DataPath
from cgraph.spec import model
from cgraph.spec.schema import published

SchemaCheck = Callable[[Any, DataPath, list["Violation"]], Any]
"""A compiled schema: checks a value at a path, appends violations, returns the built value."""

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list, tuple),
    "object": (dict,),
}
_FLOAT_MAX = sys.float_info.max
_NOTES = frozenset({"title", "description", "default", "$schema", "$id", "$defs"})
_ACCEPTED = _NOTES | {
    "$ref",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "anyOf",
    "oneOf",
    "discriminator",
    "const",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
}


@dataclass(frozen=True)
class Violation:
    """One way the data breaks the schema, at `path` (the key or item at fault).

    `kind`, and what `detail` holds for it:
    - `missing`: the key that is missing (`path` is its mapping);
    - `unknown-key`: the keys allowed there;
    - `state-type`: the `type` found, or None;
    - `type`: the JSON types allowed;
    - `key`: the schema a mapping key breaks (`propertyNames`);
    - a keyword broken (`const`, `enum`, `pattern`, `minLength`, `maxLength`, `minimum`,
      `maximum`, `exclusiveMinimum`): the keyword's value.
    """

    path: DataPath
    kind: str
    detail: Any = None


def conform(data: Any) -> tuple[model.Graph | None, list[Violation]]:
    """The graph built from `data`, or None and every violation found."""
    violations: list[Violation] = []
    graph = _graph_check()(data, (), violations)
    return (None if violations else graph), violations


@cache
def _graph_check() -> SchemaCheck:
    return compile_schema(published(), model, model.Graph)


def compile_schema(
    schema: dict[str, Any],
    models: ModuleType,
    root: type,
    each: Callable[[SchemaCheck], SchemaCheck] | None = None,
) -> SchemaCheck:
    """A check that validates data against `schema` and builds `root` (and the dataclasses
    of `models` its `$ref`s name); `conform` is this for the context-graph format. `each`
    wraps the check of each tagged union's member (a graph's state: what an editor's
    keystroke changes, `cgraph.spec.kept`)."""
    return _Compiler(schema.get("$defs", {}), models, each).compile(schema, root)


class _Compiler:
    def __init__(
        self,
        defs: dict[str, Any],
        models: ModuleType,
        each: Callable[[SchemaCheck], SchemaCheck] | None = None,
    ) -> None:
        self.defs = defs
        self.models = models
        self.each = each
        self.refs: dict[str, SchemaCheck] = {}

    def compile(self, schema: dict[str, Any], build: type | None = None) -> SchemaCheck:
        unknown = set(schema) - _ACCEPTED
        if unknown:
            raise ValueError(f"cgraph.spec.conform does not understand {sorted(unknown)}")
        if "$ref" in schema:
            return self.ref(schema["$ref"])
        if "anyOf" in schema:
            return _any_of([(self.compile(s), _kind_of(s)) for s in schema["anyOf"]])
        if "oneOf" in schema:
            tag = schema["discriminator"]["propertyName"]
            mapping = schema["discriminator"]["mapping"]
            check = _tagged(tag, {value: self.ref(ref) for value, ref in mapping.items()})
            return check if self.each is None else self.each(check)
        kind = schema.get("type")
        if kind == "object" and "properties" in schema:
            return self.object_check(schema, build)
        if kind == "object":
            names = schema.get("propertyNames")
            keys = self.compile({"type": "string", **names}) if names else None
            values = schema.get("additionalProperties", True)
            if values is False:
                raise ValueError("conform needs `properties` beside `additionalProperties`")
            return _mapping(names, keys, self.compile({} if values is True else values))
        if kind == "array":
            return _array(self.compile(schema.get("items", {})))
        if kind is None:
            return _anything
        return _scalar(schema)

    def ref(self, ref: str) -> SchemaCheck:
        name = ref.rsplit("/", 1)[-1]
        if name not in self.refs:
            # Registered before compiling, so a definition may refer to itself.
            compiled: list[SchemaCheck] = []
            self.refs[name] = lambda value, path, out: compiled[0](value, path, out)
            compiled.append(self.compile(self.defs[name], getattr(self.models, name)))
        return self.refs[name]

    def object_check(self, schema: dict[str, Any], build: type | None) -> SchemaCheck:
        if schema.get("additionalProperties") is not False:
            raise ValueError("conform checks only closed objects (additionalProperties)")
        props = {key: self.compile(sub) for key, sub in schema["properties"].items()}
        required = tuple(schema.get("required", ()))
        return _object(props, required, build, _field_names(build))


def _kind_of(schema: dict[str, Any]) -> str | None:
    """The JSON type a branch of `anyOf` takes (a `$ref` is an object); None for any."""
    if "$ref" in schema or "oneOf" in schema:
        return "object"
    kind: str | None = schema.get("type")
    return kind


def fits(kind: str, value: Any) -> bool:
    """Whether `value` is of JSON type `kind`: `True` is no integer, `3.0` is one."""
    if type(value) in _TYPES[kind]:
        return True
    return kind == "integer" and type(value) is float and value.is_integer()


def _anything(value: Any, path: DataPath, out: list[Violation]) -> Any:
    return value


def _field_names(build: type | None) -> dict[str, str]:
    """YAML key → field name, for the fields whose key is not their name (`except`)."""
    if build is None:
        return {}
    return {model.key_of(f): f.name for f in fields(build) if model.key_of(f) != f.name}


def _object(
    props: dict[str, SchemaCheck],
    required: tuple[str, ...],
    build: type | None,
    names: dict[str, str],
) -> SchemaCheck:
    allowed = tuple(props)

    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        if type(value) is not dict:
            out.append(Violation(path, "type", ("object",)))
            return value
        before = len(out)
        built: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is None:
                out.append(Violation((*path, key), "unknown-key", allowed))
            else:
                built[names.get(key) or key] = sub(item, (*path, key), out)
        for key in required:
            if key not in value:
                out.append(Violation(path, "missing", key))
        if build is None or len(out) > before:
            return built
        return build(**built)

    return check


def _mapping(
    names: dict[str, Any] | None, key_check: SchemaCheck | None, item: SchemaCheck
) -> SchemaCheck:
    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        if type(value) is not dict:
            out.append(Violation(path, "type", ("object",)))
            return value
        built = {}
        for key, sub in value.items():
            if key_check is not None:
                found: list[Violation] = []
                key_check(key, (*path, key), found)
                if found:
                    out.append(Violation((*path, key), "key", names))
                    continue
            built[key] = item(sub, (*path, key), out)
        return built

    return check


def _array(item: SchemaCheck) -> SchemaCheck:
    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        if type(value) not in (list, tuple):
            out.append(Violation(path, "type", ("array",)))
            return value
        return tuple(item(sub, (*path, index), out) for index, sub in enumerate(value))

    return check


def _any_of(branches: list[tuple[SchemaCheck, str | None]]) -> SchemaCheck:
    """The branch whose type fits the value speaks; with none, one `type` violation."""
    allowed = tuple(kind for _, kind in branches if kind)

    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        fitting = [c for c, kind in branches if kind is None or fits(kind, value)]
        if not fitting:
            out.append(Violation(path, "type", allowed))
            return value
        for candidate in fitting[:-1]:
            trial: list[Violation] = []
            built = candidate(value, path, trial)
            if not trial:
                return built
        return fitting[-1](value, path, out)

    return check


def _tagged(tag: str, members: dict[Any, SchemaCheck]) -> SchemaCheck:
    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        if type(value) is not dict:
            out.append(Violation(path, "type", ("object",)))
            return value
        found = value.get(tag)
        member = members.get(found) if isinstance(found, str) else None
        if member is None:
            out.append(Violation(path, "state-type", found))
            return value
        return member(value, path, out)

    return check


def _scalar(schema: dict[str, Any]) -> SchemaCheck:
    kind = schema["type"]
    tests = _tests(schema)
    # With a fixed set of values, "expected 1" says more than "should be a number".
    choices = [(k, e) for k, e, _ in tests if k in ("const", "enum")]
    wrong_type = Violation((), *choices[0]) if choices else Violation((), "type", (kind,))

    def check(value: Any, path: DataPath, out: list[Violation]) -> Any:
        if not fits(kind, value):
            out.append(replace(wrong_type, path=path))
            return value
        if kind == "integer":
            value = int(value)  # `3.0` is an integer in JSON Schema
        elif kind == "number" and abs(value) < _FLOAT_MAX:
            value = float(value)  # `timeout: 30` is a float to the code that reads it
        for keyword, expected, holds in tests:
            if not holds(value):
                out.append(Violation(path, keyword, expected))
                break
        return value

    return check


def _tests(schema: dict[str, Any]) -> list[tuple[str, Any, Callable[[Any], object]]]:
    """(keyword, its value, a test) for each constraint on a scalar, in schema order."""
    return [(k, e, _TEST[k](e)) for k, e in schema.items() if k in _TEST]


def _pattern(expected: str) -> Callable[[Any], object]:
    # A final `$` ends the text in the ECMA regexes editors use (and in pydantic's); in
    # Python it also matches before a final "\n". The one place cgraph is stricter than
    # Python's jsonschema.
    ends = expected.endswith("$") and not expected.endswith("\\$")
    return re.compile(expected[:-1] + r"\Z" if ends else expected).search


def _min_length(expected: int) -> Callable[[Any], object]:
    return lambda value: len(value) >= expected


_TEST: dict[str, Callable[[Any], Callable[[Any], object]]] = {
    "const": lambda expected: partial(operator.eq, expected),
    "enum": lambda expected: tuple(expected).__contains__,
    "pattern": _pattern,
    "minLength": _min_length,
    "maxLength": lambda expected: lambda value: len(value) <= expected,
    "minimum": lambda expected: partial(operator.le, expected),
    "maximum": lambda expected: partial(operator.ge, expected),
    "exclusiveMinimum": lambda expected: partial(operator.lt, expected),
}
