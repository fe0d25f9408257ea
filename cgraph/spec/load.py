"""File → document → validated, immutable `Graph`; schema problems in a designer's words."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from cgraph.diagnostics import Diagnostic, Fix, has_errors
from cgraph.errors import GraphError
from cgraph.spec import model as m
from cgraph.spec.conform import SchemaCheck, Violation, conform
from cgraph.spec.kept import StateMemo
from cgraph.spec.limits import MAX_VALUE_CHARS, ReadLimits, too_large
from cgraph.spec.model import HANDLER_PATTERN, TYPE_LETTERS, key_of
from cgraph.spec.read import Document, read_file, read_text
from cgraph.spec.trust import Trust

# The graph's sections (`agent:`, `limits:`...): fields whose value is one dataclass.
_SECTIONS = frozenset(
    key_of(f)
    for f in fields(m.Graph)
    if is_dataclass(f.default_factory) and not f.metadata.get("internal")
)
# Mappings whose keys the designer names (a variable, a tier, a prompt kind).
_NAMED_VALUES = frozenset(
    {"set", "arguments", "variables", "prompts", "max_visits", "ttl_days", "max_items"}
)


def load_graph(
    path: str | Path, *, trust: Trust | None = None, limits: ReadLimits | None = None
) -> m.Graph:
    """Load and validate one graph file; raise `GraphError` (with diagnostics) if invalid.

    `trust` is what the graph may reach besides its folder (default `Trust()`: nothing),
    `limits` what may be read (default `ReadLimits()`: the shipped limits); the graph
    keeps both, and a session running it holds its sub-graphs and tools to them. Neither
    is read from the environment: the command line reads `CGRAPH_ALLOW_MODULES`,
    `CGRAPH_ALLOW_PATHS` and `CGRAPH_MAX_FILE_SIZE` and passes them here.

    Sub-graphs are not read here: a session loads them as it starts, to import their
    tools' handlers early (`cgraph.runtime.routes.graphs.Graphs.reachable`), and
    `cgraph.lint.walk.lint_file` checks them ahead of time.
    """
    graph, diagnostics = parse_graph(read_file(path, (limits or ReadLimits()).file_size))
    if graph is None or has_errors(diagnostics):
        raise GraphError(f"{path}: invalid context graph", diagnostics)
    return _given(graph, trust, limits)


def load_graph_text(
    text: str,
    file: str = "<string>",
    *,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> m.Graph:
    """Like `load_graph`, for YAML text; `file` names it in diagnostics."""
    graph, diagnostics = parse_graph(read_text(text, file))
    if graph is None or has_errors(diagnostics):
        raise GraphError(f"{file}: invalid context graph", diagnostics)
    return _given(graph, trust, limits)


def _given(graph: m.Graph, trust: Trust | None, limits: ReadLimits | None) -> m.Graph:
    """`graph` keeping the trust and limits it was loaded with (the defaults it has)."""
    if trust is None and limits is None:
        return graph
    return replace(graph, trust=trust or Trust(), read_limits=limits or ReadLimits())


def parse_graph(
    doc: Document, memo: StateMemo | None = None
) -> tuple[m.Graph | None, list[Diagnostic]]:
    """Validate a read document against the format; every problem becomes a diagnostic.
    With `memo`, a state checked in the memo's last lint is not checked again."""
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
    graph, violations = conform(doc.data) if memo is None else memo.conform(doc.data)
    if graph is None:
        diagnostics.extend(schema_diagnostics(doc, violations))
        return None, diagnostics
    diagnostics.extend(_large_variables(doc, graph))
    return replace(graph, source=Path(doc.file)), diagnostics


def _large_variables(doc: Document, graph: m.Graph) -> list[Diagnostic]:
    """A variable's starting value is stored with every session: the value limit holds."""
    return [
        doc.diag(
            ("variables", name),
            "value-too-large",
            f"variable `{name}` starts with a value over {MAX_VALUE_CHARS:,} characters "
            "(counted as JSON, aliases expanded)",
            "start it smaller; a session stores every variable with each turn",
        )
        for name, value in graph.variables.items()
        if too_large(value)
    ]


def schema_diagnostics(doc: Document, violations: list[Violation]) -> list[Diagnostic]:
    return [_describe(doc, violation) for violation in violations]


def parse_marked(
    doc: Document, key: str, kind: str, hint: str, check: SchemaCheck
) -> tuple[Any | None, list[Diagnostic]]:
    """A file marked by a top-level `key: 1` (a test or a sim file) checked against its
    schema without the marker and built; `None` with the diagnostics when it is not one."""
    diagnostics = list(doc.diagnostics)
    if not doc.ok:
        return None, diagnostics
    if not (isinstance(doc.data, dict) and key in doc.data):
        diagnostics.append(doc.diag((), f"not-a-{kind}-file", f"no top-level `{key}:`", hint))
        return None, diagnostics
    if doc.data[key] != 1 or type(doc.data[key]) is not int:
        message = f"`{key}` is {doc.data[key]!r}; this cgraph reads version 1"
        diagnostics.append(doc.diag((key,), "schema", message, f"write `{key}: 1`"))
    violations: list[Violation] = []
    built = check({k: v for k, v in doc.data.items() if k != key}, (), violations)
    diagnostics.extend(schema_diagnostics(doc, violations))
    if has_errors(diagnostics):
        return None, diagnostics
    return replace(built, source=Path(doc.file)), diagnostics


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
        # A nested section such as `limits.history` is named whole.
        return f"`{'.'.join(str(step) for step in path)}`"
    return "the graph"


def closest(word: str, options: list[str] | tuple[str, ...]) -> str | None:
    """The option `word` is most likely a misspelling of, if any is close."""
    return _closest(word, tuple(options))


@lru_cache(maxsize=64)
def _closest(word: str, options: tuple[str, ...]) -> str | None:
    # Remembered: a message and its fix ask alike, and a language server asks again on
    # every keystroke; over a big graph's 1,000 states each asking costs milliseconds.
    import difflib  # only on the error path; keeps `cgraph lint` on a clean file lean

    # Case aside, so that `end` or `ned` finds `END` and `Check_Meds` finds `check_meds`.
    folded = {option.lower(): option for option in reversed(options)}
    close = difflib.get_close_matches(word.lower(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def did_you_mean(word: str, options: list[str] | tuple[str, ...]) -> str:
    close = closest(word, options)
    return f"did you mean `{close}`? " if close else ""


def fix_for(word: str, options: list[str] | tuple[str, ...]) -> Fix | None:
    """The edit `did_you_mean` proposes, as data: `word` replaced by the closest option."""
    close = closest(word, options)
    return Fix(word, close) if close else None


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        data = data[step]
    return data


def _describe(doc: Document, violation: Violation) -> Diagnostic:
    data, path, kind = doc.data, violation.path, violation.kind
    if kind == "missing":
        return doc.diag(
            path,
            "missing-key",
            f"{where(data, path)} is missing `{violation.detail}`",
            _missing_hint(violation.detail),
            key=True,
        )
    if kind == "unknown-key":
        keys = list(violation.detail)
        hint = did_you_mean(str(path[-1]), keys) + f"allowed keys are {', '.join(keys)}"
        message = f"{where(data, path[:-1])} has unknown key `{path[-1]}`"
        fix = fix_for(str(path[-1]), keys)
        return doc.diag(path, "unknown-key", message, hint, key=True, fix=fix)
    if kind == "state-type":
        return _state_type(doc, path, violation.detail)
    if kind == "key":
        return _wrong_key(doc, path, violation.detail)
    return _wrong_value(doc, violation)


def _state_type(doc: Document, path: tuple[Any, ...], got: Any) -> Diagnostic:
    """A state whose `type` is missing or not one of the seven."""
    written = "type" in _value_at(doc.data, path)
    if got is not None:
        message = f"state `{path[1]}` has unknown type `{got}`"
    elif written:
        message = f"state `{path[1]}` has `type:` with no value"
    else:
        message = f"state `{path[1]}` has no `type`"
    return doc.diag(
        path + (("type",) if written else ()),
        "state-type",
        message,
        did_you_mean(str(got), list(TYPE_LETTERS)) + f"types are {', '.join(TYPE_LETTERS)}",
        key=not written,
        fix=fix_for(str(got), list(TYPE_LETTERS)) if written else None,
    )


def _wrong_key(doc: Document, path: tuple[Any, ...], names: dict[str, Any]) -> Diagnostic:
    """A mapping key that is not an id (`states`, `variables`) or not a known name."""
    place = f"key `{path[-1]}` of `{path[-2]}` in {where(doc.data, path[:-2])}"
    if "enum" in names:
        choices = _choices(names["enum"])
        hint = did_you_mean(str(path[-1]), names["enum"]) + f"use one of {choices}"
        fix = fix_for(str(path[-1]), names["enum"])
        return doc.diag(path, "schema", f"{place} is not one of {choices}", hint, key=True, fix=fix)
    return doc.diag(path, "schema", f"{place} is not a valid id", _ID_HINT, key=True)


def _wrong_value(doc: Document, violation: Violation) -> Diagnostic:
    """A value of the wrong type or out of range: "`name` of the graph is not a valid id"."""
    data, path, kind = doc.data, violation.path, violation.kind
    message, hint = _value_message(kind, violation.detail, _value_at(data, path))
    key = path[-1] if path else None
    field = f"`{key}` of {where(data, path[:-1])}" if isinstance(key, str) else where(data, path)
    if (len(path) == 2 and path[0] == "states") or (
        len(path) > 2 and path[-2] == "exit_conditions"
    ):
        field = where(data, path)  # "state `x`", "exit 2 of state `x`"
    elif len(path) >= 2 and path[-2] in _NAMED_VALUES:
        field = f"`{path[-2]}.{key}` of {where(data, path[:-2])}"  # "`set.n` of state `x`"
    elif isinstance(key, int) and len(path) == 2 and path[0] in ("tools", "start"):
        field = where(data, path)  # "start entry 2"
        if path[0] == "start" and kind == "type":
            hint = "write each entry as `{when: condition, state: id}`, or `start: id` alone"
    elif isinstance(key, int) and len(path) >= 2:
        field = f"item {key + 1} of `{path[-2]}` in {where(data, path)}"
    return doc.diag(path, "schema", f"{field} {message}", hint)


def _missing_hint(name: Any) -> str:
    if name == "type":
        return f"add `type:` — one of {', '.join(TYPE_LETTERS)}"
    if name == "exit_conditions":
        return "add `exit_conditions:` with `description` and `next_state` for each way out"
    return f"add `{name}:`"


_ID_HINT = "ids start with a letter or _ and use letters, digits, _ . -"
_TYPE_WORDS = {
    "string": ("text", "write text; quote it if it looks like a number"),
    "array": ("a list", "write it as `[a, b]` or one `- item` a line"),
    "object": ("a mapping of keys", "write `key: value` lines, indented"),
    "integer": ("a whole number", "write a number such as 3"),
    "number": ("a number", "write a number such as 0.5"),
    "boolean": ("true or false", "write true or false"),
}
_LIMITS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than"}


def _value_message(kind: str, detail: Any, value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        word = "true" if value else "false"
        return (f"is the YAML boolean `{word}`", f'quote it if you meant text: "{word}"')
    if kind == "pattern" and detail == HANDLER_PATTERN:
        return (f"`{value}` is not `module:function`", "name a function: `package.module:function`")
    if kind == "pattern":
        return (f"`{value}` is not a valid id", _ID_HINT)
    if kind == "minLength":
        return ("must not be empty", "write some text or remove the key")
    if kind == "maxLength":
        return (
            f"is {len(value):,} characters, over {detail:,}",
            f"shorten it to {detail:,} or fewer",
        )
    if kind in ("const", "enum"):
        options = (detail,) if kind == "const" else detail
        choice = "one of " if len(options) > 1 else ""
        return (
            f"is {_kind(value)}, expected {_choices(options)}",
            f"use {choice}{_choices(options)}",
        )
    if kind in _LIMITS:
        return (f"is `{value}`, should be {_LIMITS[kind]} {detail}", "change the number")
    words = [_TYPE_WORDS[name] for name in detail if name in _TYPE_WORDS]
    wanted = " or ".join(word for word, _ in words) or "nothing"
    hint = words[0][1] if words else "remove the value"
    return (f"should be {wanted}, got {_kind(value)}", hint)


def _choices(options: Any) -> str:
    """`'a', 'b' or 'c'`, as a designer would read a list of allowed values."""
    shown = [repr(option) if isinstance(option, str) else str(option) for option in options]
    return " or ".join(shown) if len(shown) < 3 else f"{', '.join(shown[:-1])} or {shown[-1]}"


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
