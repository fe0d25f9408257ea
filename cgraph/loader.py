"""File → document → validated, immutable `Graph`; schema problems in a designer's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cgraph import model as m
from cgraph.diagnostics import Diagnostic, has_errors
from cgraph.errors import GraphError
from cgraph.reader import Document, read_file, read_text

_STATE_MODELS: dict[str, type[BaseModel]] = {
    "action": m.ActionState,
    "decision": m.DecisionState,
    "reflection": m.ReflectionState,
    "recall": m.RecallState,
    "annotation": m.AnnotationState,
    "side_effect": m.SideEffectState,
    "graph": m.GraphState,
}
_SECTIONS: dict[str, type[BaseModel]] = {
    "agent": m.Agent,
    "limits": m.Limits,
    "memory": m.MemoryConfig,
    "model": m.ModelConfig,
}


def load_graph(path: str | Path) -> m.Graph:
    """Load and validate one graph file; raise `GraphError` (with diagnostics) if invalid.

    Sub-graphs are not read here: a session loads each when it first enters it, and
    `cgraph.lint.lint_file` checks them ahead of time.
    """
    graph, diagnostics = parse_graph(read_file(path))
    if graph is None or has_errors(diagnostics):
        raise GraphError(f"{path}: invalid context graph", diagnostics)
    return graph


def load_graph_text(text: str, file: str = "<string>") -> m.Graph:
    """Like `load_graph`, for YAML text; `file` names it in diagnostics."""
    graph, diagnostics = parse_graph(read_text(text, file))
    if graph is None or has_errors(diagnostics):
        raise GraphError(f"{file}: invalid context graph", diagnostics)
    return graph


def parse_graph(doc: Document) -> tuple[m.Graph | None, list[Diagnostic]]:
    """Validate a read document against the format; every problem becomes a diagnostic."""
    diagnostics = list(doc.diagnostics)
    if not doc.ok:
        return None, diagnostics
    if not isinstance(doc.data, dict):
        diagnostics.append(
            doc.diag(
                (),
                "not-a-graph",
                "a context graph is a mapping of keys",
                "start the file with `cgraph: 1`, `name:`, `start:` and `states:`",
            )
        )
        return None, diagnostics
    if "cgraph" not in doc.data and "states" not in doc.data:
        # Other YAML (a CI config, a fixture): one clear message instead of a cascade.
        diagnostics.append(
            doc.diag(
                (),
                "not-a-graph",
                "this file has neither `cgraph:` nor `states:`; "
                "it does not look like a context graph",
                "start a graph with `cgraph: 1`, `name:`, `start:` and `states:`",
            )
        )
        return None, diagnostics
    try:
        graph = m.Graph.model_validate(doc.data)
    except ValidationError as err:
        diagnostics.extend(schema_diagnostics(doc, err))
        return None, diagnostics
    graph._source = Path(doc.file)
    return graph, diagnostics


_WRONG_TYPE = frozenset(
    {"string_type", "str_type", "tuple_type", "list_type", "dict_type", "model_type"}
)


def schema_diagnostics(doc: Document, err: ValidationError) -> list[Diagnostic]:
    errors = [(*_data_path(doc.data, e["loc"]), e) for e in err.errors(include_url=False)]
    # `start: [{stat: a}]` fails both union members: "should be text" at `start` and
    # "missing `state`" inside it. The value has the list's shape, so only the deeper
    # errors are news; a wrong type at a path other errors go beneath is dropped.
    beneath = {path[:depth] for path, _, _ in errors for depth in range(len(path))}
    seen: set[tuple[tuple[Any, ...], str]] = set()
    found = []
    for path, leftover, error in errors:
        kind = error["type"]
        if (path, kind) in seen or (kind in _WRONG_TYPE and path in beneath):
            continue  # a union reports each member's failure; one message is enough
        seen.add((path, kind))
        found.append(_describe(doc, path, leftover, error))
    return found


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Keep the steps of a pydantic location that exist in the data (drop union labels)."""
    path: list[Any] = []
    current = data
    for index, step in enumerate(loc):
        in_dict = isinstance(current, dict) and step in current
        in_list = isinstance(current, list) and isinstance(step, int) and step < len(current)
        if in_dict or in_list:
            current = current[step]
            path.append(step)
        elif index == len(loc) - 1 or not _is_union_label(step):
            return tuple(path), tuple(s for s in loc[index:] if not _is_union_label(s))
    return tuple(path), ()


def _is_union_label(step: Any) -> bool:
    """`tuple[StartEntry, ...]`, `constrained-str`, a state type: a union member's name.

    Field names are Python identifiers, so a step with `[` or `-` is never a key.
    """
    return isinstance(step, str) and ("[" in step or "-" in step or step in _STATE_MODELS)


def where(data: Any, path: tuple[Any, ...]) -> str:
    """A location in words: "state `x`", "exit 2 of state `x`", "`limits`"."""
    if len(path) >= 2 and path[0] == "states":
        state = data.get("states", {}).get(path[1])
        kind = state.get("type") if isinstance(state, dict) else None
        label = f"state `{path[1]}`" + (f" (type {kind})" if isinstance(kind, str) else "")
        if len(path) >= 4 and path[2] == "exit_conditions" and isinstance(path[3], int):
            return f"exit {path[3] + 1} of {label}"
        return label
    if len(path) >= 2 and path[0] in ("tools", "start") and isinstance(path[1], int):
        return f"{path[0]} entry {path[1] + 1}"
    if path and path[0] in _SECTIONS:
        return f"`{path[0]}`"
    return "the graph"


def model_at(data: Any, path: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model whose keys are allowed at `path`, for "allowed keys are …" hints."""
    if not path:
        return m.Graph
    if len(path) == 1:
        return _SECTIONS.get(path[0])
    if path[0] == "tools" and len(path) == 2:
        return m.Tool
    if path[0] == "start" and len(path) == 2:
        return m.StartEntry
    if path[0] == "states":
        state = data.get("states", {}).get(path[1]) if isinstance(data, dict) else None
        kind = state.get("type") if isinstance(state, dict) else None
        if len(path) == 2:
            return _STATE_MODELS.get(kind) if isinstance(kind, str) else None
        if len(path) == 4 and path[2] == "exit_conditions":
            return m.ExitCondition
    return None


def allowed_keys(data: Any, path: tuple[Any, ...]) -> list[str]:
    model = model_at(data, path)
    return list(model.model_fields) if model else []


def did_you_mean(word: str, options: list[str] | tuple[str, ...]) -> str:
    import difflib  # only on the error path; keeps `cgraph lint` on a clean file lean

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`? " if close else ""


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        data = data[step]
    return data


def _describe(
    doc: Document, path: tuple[Any, ...], leftover: tuple[Any, ...], error: Any
) -> Diagnostic:
    data = doc.data
    kind = error["type"]
    place = where(data, path)
    key = path[-1] if path else None
    if kind == "missing":
        name = leftover[0] if leftover else key
        return doc.diag(
            path,
            "missing-key",
            f"{place} is missing `{name}`",
            _missing_hint(data, path, name),
            key=True,
        )
    if kind == "extra_forbidden":
        parent = path[:-1]
        keys = allowed_keys(data, parent)
        hint = did_you_mean(str(key), keys) + (
            f"allowed keys are {', '.join(keys)}" if keys else ""
        )
        return doc.diag(
            path, "unknown-key", f"{where(data, parent)} has unknown key `{key}`", hint, key=True
        )
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return _state_type(doc, path)
    return _wrong_value(doc, path, error)


def _state_type(doc: Document, path: tuple[Any, ...]) -> Diagnostic:
    """A state whose `type` is missing or not one of the seven."""
    value = _value_at(doc.data, path)
    got = value.get("type") if isinstance(value, dict) else None
    message = (
        f"state `{path[1]}` has unknown type `{got}`"
        if got is not None
        else f"state `{path[1]}` has no `type`"
    )
    return doc.diag(
        path + (("type",) if got is not None else ()),
        "state-type",
        message,
        did_you_mean(str(got), list(_STATE_MODELS)) + f"types are {', '.join(_STATE_MODELS)}",
        key=got is None,
    )


def _wrong_value(doc: Document, path: tuple[Any, ...], error: Any) -> Diagnostic:
    """A value of the wrong type or out of range: "`name` of the graph is not a valid id"."""
    data, kind = doc.data, error["type"]
    message, hint = _value_message(kind, error, _value_at(data, path))
    key = path[-1] if path else None
    field = f"`{key}` of {where(data, path[:-1])}" if isinstance(key, str) else where(data, path)
    if isinstance(key, int) and len(path) == 2 and path[0] in ("tools", "start"):
        field = where(data, path)  # "start entry 2"
        if path[0] == "start" and kind in _WRONG_TYPE:
            hint = "write each entry as `{when: condition, state: id}`, or `start: id` alone"
    elif isinstance(key, int) and len(path) >= 2:
        field = f"item {key + 1} of `{path[-2]}` in {where(data, path)}"
    return doc.diag(path, "schema", f"{field} {message}", hint)


def _missing_hint(data: Any, path: tuple[Any, ...], name: Any) -> str:
    if name == "type":
        return f"add `type:` — one of {', '.join(_STATE_MODELS)}"
    if name == "exit_conditions":
        return "add `exit_conditions:` with `description` and `next_state` for each way out"
    return f"add `{name}:`"


def _value_message(kind: str, error: Any, value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        word = "true" if value else "false"
        return (f"is the YAML boolean `{word}`", f'quote it if you meant text: "{word}"')
    if kind == "string_pattern_mismatch":
        return (
            f"`{value}` is not a valid id",
            "ids start with a letter or _ and use letters, digits, _ . -",
        )
    if kind == "string_too_short":
        return ("must not be empty", "write some text or remove the key")
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        choice = "one of " if " or " in expected else ""
        return (f"is `{value}`, expected {expected}", f"use {choice}{expected}")
    if kind in ("string_type", "str_type"):
        return (
            f"should be text, got {_kind(value)}",
            "write text; quote it if it looks like a number",
        )
    if kind in ("tuple_type", "list_type"):
        return (
            f"should be a list, got {_kind(value)}",
            "write it as `[a, b]` or one `- item` a line",
        )
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return (
            f"should be a mapping of keys, got {_kind(value)}",
            "write `key: value` lines, indented",
        )
    if kind.startswith(("int_", "float_")) or kind in (
        "greater_than_equal",
        "greater_than",
        "less_than_equal",
    ):
        return (f"is `{value}`: {error['msg'].lower()}", "change the number")
    return (error["msg"].lower(), "see the format reference in the README or `cgraph schema`")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"text `{value}`"
    return f"`{value}`"
