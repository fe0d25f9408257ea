"""Side-effect arguments against the JSON types of the tool's parameters, where lint can tell.

A literal's type is known. A template's is known when it is one `{{ expression }}` whose
value has a known type (a built-in name such as `message`, a constant, a converting filter
such as `| int`), or when literal text around its tags makes it text. Anything else is
left to the run time, which validates the rendered arguments against `parameters`.
Templates are parsed, never compiled or run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

from cgraph.diagnostics import Diagnostic
from cgraph.lint.structure import GraphContext
from cgraph.spec.templating import is_template, text_env

BUILTIN_TYPES = {
    "message": "string",
    "user_id": "string",
    "session_id": "string",
    "state": "string",
    "graph": "string",
    "turn": "integer",
    "memories": "array",
    "notes": "array",
    "annotations": "array",
    "vars": "object",
}
FILTER_TYPES = {
    "int": "integer",
    "float": "number",
    "length": "integer",
    "count": "integer",
    "string": "string",
    "lower": "string",
    "upper": "string",
    "trim": "string",
    "title": "string",
    "capitalize": "string",
    "join": "string",
    "tojson": "string",
    "list": "array",
    "sort": "array",
    "unique": "array",
    "dictsort": "array",
}
CONVERT = {"integer": "int", "number": "float", "string": "string", "array": "list"}
_LETTERS = re.compile(r"[A-Za-z]")


def check_argument_types(ctx: GraphContext) -> Iterator[Diagnostic]:
    for name, state in ctx.graph.states.items():
        if state.type != "side_effect":
            continue
        tool = ctx.graph.tool(state.tool)
        properties = tool.parameters.get("properties") if tool else None
        if not isinstance(properties, dict):
            continue
        for argument, value in state.arguments.items():
            wanted = _types(properties.get(argument))
            got = value_type(value)
            if wanted and got is not None and not fits(got, wanted):
                yield _mismatch(ctx, name, argument, value, got, wanted)


def _mismatch(
    ctx: GraphContext, state: str, argument: str, value: Any, got: str, wanted: tuple[str, ...]
) -> Diagnostic:
    expected = " or ".join(wanted)
    hint = f"pass {_article(wanted[0])} {wanted[0]}"
    if isinstance(value, str) and is_template(value) and wanted[0] in CONVERT:
        hint += f", e.g. convert in the template: `{{{{ … | {CONVERT[wanted[0]]} }}}}`"
    return ctx.diag(
        ("states", state, "arguments", argument),
        "argument-type",
        f"state `{state}` passes {_article(got)} {got} as `{argument}`, "
        f"but the tool's parameter is {_article(expected)} {expected}",
        hint,
    )


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _types(schema: Any) -> tuple[str, ...]:
    if not isinstance(schema, dict):
        return ()
    kind = schema.get("type")
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list):
        return tuple(k for k in kind if isinstance(k, str))
    return ()


def fits(got: str, wanted: tuple[str, ...]) -> bool:
    return got in wanted or (got == "integer" and "number" in wanted)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return "string"


def value_type(value: Any) -> str | None:
    """The JSON type an argument renders to, or None when only the run time can tell."""
    if not isinstance(value, str) or not is_template(value):
        return json_type(value)
    return _template_type(value)


@lru_cache(maxsize=1024)
def _template_type(source: str) -> str | None:
    try:
        body = text_env().parse(source).body
    except TemplateSyntaxError:
        return None  # reported by the template checks
    if len(body) != 1 or not isinstance(body[0], nodes.Output):
        return None
    parts = body[0].nodes
    if len(parts) == 1 and not isinstance(parts[0], nodes.TemplateData):
        return _expression_type(parts[0])
    text = "".join(p.data for p in parts if isinstance(p, nodes.TemplateData))
    # Text around the tags: the native renderer joins the pieces, and a piece of prose is
    # never read back as a number or a list.
    return "string" if _LETTERS.search(text) else None


def _expression_type(node: nodes.Node) -> str | None:
    if isinstance(node, nodes.Name):
        return BUILTIN_TYPES.get(node.name)
    if isinstance(node, nodes.Const):
        return json_type(node.value)
    if isinstance(node, nodes.Filter):
        return FILTER_TYPES.get(node.name)
    if isinstance(node, nodes.Concat):
        return "string"
    return None
