"""Jinja checks: every templated text must parse, and use only names that exist.

Only strings holding `{{`, `{%` or `{#` are parsed, and nothing is ever compiled or run
(`cgraph.lint.template_ast`). Parsing is cached by the template's *skeleton* (its tags
without the text between them): names and syntax depend only on the tags, and graphs
repeat the same few tags in thousands of sentences. A text whose tags cannot be cut out
with certainty (an unclosed tag, a quote or brace inside one) is parsed whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any

from cgraph.diagnostics import DataPath, Diagnostic
from cgraph.lint.structure import GraphContext, field_of
from cgraph.lint.template_ast import TemplateProblem, read_names
from cgraph.spec.kept import StateMemo
from cgraph.spec.load import did_you_mean, fix_for
from cgraph.spec.model import Graph
from cgraph.spec.read import Document
from cgraph.spec.templating import BUILTIN_NAMES, is_template, text_env

_TAGS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
# Inside a tag, a quote or a brace may hide the closer (`{{ "}}" }}`, `{{ {'a': {}} }}`):
# such a tag's end is only known to Jinja's lexer, so the whole text is parsed.
_TAG_INNER_UNSURE = re.compile(r"[\"'{}]")
# Keys whose values are ids, tags or example utterances, never rendered as templates
# (tests/unit/lint/test_template_keys.py holds it to the model's fields).
NOT_TEMPLATES = frozenset(
    {
        "type",
        "next_state",
        "on_error",
        "tool",
        "result",
        "graph",
        "tiers",
        "included_contexts",
        "message_metadata",
        "annotations",
        "examples",
        "max_visits",
        "max_turns",
        "top_k",
        "when",  # an expression, checked by cgraph.lint.flows
        "on_tool",
        "label",
        "drop",
        "handoff",
        "collect",
        "append",
        "except",
        "enter",
        "on_limit",
        "reset",
        "summary_prompt",  # said to the model as written
    }
)
# Keys whose values are mappings the designer names (`set: {mood: ...}`): their keys are
# names, not fields, so none of them is skipped.
_NAMED = frozenset({"set", "arguments", "with"})
CLARIFY_NAMES = frozenset({"candidates"})
"""What a `clarify:` question may read besides the graph's names: the exits it names."""
CORRECTION_NAMES = frozenset({"slot", "old", "new"})
"""What a slot's `correction_question` and `correction_reply` may read besides the
graph's names."""
Extra = frozenset[str] | None
"""Names a text may read besides the graph's own; None: its names are not checked."""


Analysis = tuple[tuple[int, str] | None, frozenset[str]]


@lru_cache(maxsize=8192)
def analyse(source: str) -> Analysis:
    """(line and message of a problem, or None; names the template reads).

    Runs no template code: the source is parsed, never compiled or evaluated.
    """
    try:
        return None, read_names(text_env(), source)
    except TemplateProblem as problem:
        return (problem.line, problem.message), frozenset()


def skeleton(source: str) -> str | None:
    """The template's tags without the text between them, when that provably parses the
    same as the whole text; None when only the whole text can tell."""
    tags = _TAGS.findall(source)
    if is_template(_TAGS.sub("", source)):
        return None  # an opener without its closer (`{{ x }`, `{% if x`) or a raw block
    if any(_TAG_INNER_UNSURE.search(tag, 2, len(tag) - 2) for tag in tags):
        return None
    return "".join(tags)


def _analyse_fast(source: str) -> Analysis:
    # Graphs repeat the same few tags in thousands of sentences: analyse the tags once.
    tags = skeleton(source)
    if tags is None:
        return analyse(source)
    error, names = analyse(tags)
    if error is not None:  # locate it on the real text
        return analyse(source)
    return error, names


def template_strings(
    data: Any, memo: StateMemo | None = None
) -> Iterator[tuple[DataPath, str, Extra]]:
    """(path, text, names it may read besides the graph's, or None when its names are
    not checked) of every templated string a graph renders; a state's are found again
    only when it is new to `memo`."""
    if not isinstance(data, dict):
        return
    none: frozenset[str] = frozenset()
    yield from _strings(data.get("agent"), ("agent",), none)
    yield from _strings(data.get("fallback"), ("fallback",), none)
    yield from _strings(data.get("clarify"), ("clarify",), CLARIFY_NAMES)
    states = data.get("states")
    if isinstance(states, dict):
        for name, state in states.items():
            if not isinstance(state, dict):
                continue
            if memo is None:
                yield from _state_strings(name, state)
            else:
                yield from memo.get("templates", state, name, partial(_listed, name, state))
    slots = data.get("slots")
    if isinstance(slots, dict):
        for name, slot in slots.items():
            if isinstance(slot, dict):
                for key in ("correction_question", "correction_reply"):
                    where = ("slots", name, key)
                    yield from _strings(slot.get(key), where, CORRECTION_NAMES)
    prompts = data.get("prompts")
    if isinstance(prompts, dict):
        # Prompt templates see the engine's prompt context, not graph variables.
        yield from _strings(prompts, ("prompts",), None)


def _state_strings(name: str, state: dict[str, Any]) -> Iterator[tuple[DataPath, str, Extra]]:
    fields = {k: v for k, v in state.items() if k not in ("description", "clarify")}
    yield from _strings(fields, ("states", name), frozenset())
    clarify = state.get("clarify")
    yield from _strings(clarify, ("states", name, "clarify"), CLARIFY_NAMES)


def _listed(name: str, state: dict[str, Any]) -> list[tuple[DataPath, str, Extra]]:
    return list(_state_strings(name, state))


def _strings(
    value: Any, path: DataPath, names: Extra, fields: bool = True
) -> Iterator[tuple[DataPath, str, Extra]]:
    if isinstance(value, str):
        if is_template(value):
            yield path, value, names
    elif isinstance(value, dict):
        for key, item in value.items():
            if not fields:
                yield from _strings(item, (*path, key), names, False)
            elif key not in NOT_TEMPLATES:
                yield from _strings(item, (*path, key), names, key not in _NAMED)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index), names, fields)


def declared_names(graph: Graph) -> frozenset[str]:
    """The variables a graph declares: `variables`, `slots`, `set:` keys and `result`s
    (a side-effect state's, a tool's), and what tools `sets:`."""
    names = set(graph.variables) | set(graph.slots)
    for tool in graph.tools:
        names.update((tool.result,) if tool.result else ())
        names.update(tool.sets)
    for state in graph.states.values():
        names.update(field_of(state, "set") or {})
        result = field_of(state, "result")
        if result:
            names.add(result)
    return frozenset(names)


def allowed_names(ctx: GraphContext) -> frozenset[str]:
    return BUILTIN_NAMES | declared_names(ctx.graph) | ctx.subgraph_names | ctx.outer_names


def check_templates(ctx: GraphContext) -> Iterator[Diagnostic]:
    allowed = allowed_names(ctx)
    memo = ctx.memo
    for path, text, extra in template_strings(ctx.doc.data, memo):
        if memo is None:
            error, used = _analyse_fast(text)
        else:  # the very string of a state kept: the same analysis
            error, used = memo.get("analysis", text, None, partial(_analyse_fast, text))
        if error is not None:
            line, column, message = _position(ctx.doc, path, error)
            diag = ctx.diag(
                path,
                "template-syntax",
                f"Jinja: {message}",
                "check the `{{ }}` and `{% %}` tags: every tag closed, every block ended",
            )
            yield _moved(diag, line, column)
            continue
        if extra is None:
            continue
        yield from _self_reference(ctx, path, used)
        for name in sorted((used - allowed - extra) & set(ctx.dropped_slots)):
            yield not_returned(ctx, path, name)
        for name in sorted(used - allowed - extra - set(ctx.dropped_slots)):
            yield ctx.diag(
                path,
                "undefined-variable",
                f"template uses `{name}`, which is never defined",
                did_you_mean(name, sorted(allowed))
                + "declare it under `variables:`, set it in an annotation state's `set:`, "
                "or store a tool `result:` in it",
                fix=fix_for(name, sorted(allowed)),
            )


def _self_reference(
    ctx: GraphContext, path: DataPath, used: frozenset[str]
) -> Iterator[Diagnostic]:
    """`set: {n: "{{ n + 1 }}"}` fails on the first visit unless `n` starts with a value
    (a slot's is `cgraph.lint.unset`'s: a path may have filled it by then)."""
    if len(path) == 4 and path[0] == "states" and path[2] == "set":
        var = str(path[3])
        graph = ctx.graph
        if var in used and var not in graph.variables and var not in graph.slots:
            yield ctx.diag(
                path,
                "uninitialised-variable",
                f"`{var}` is computed from itself but has no initial value: the first visit fails",
                f"give it a starting value under `variables:`, e.g. `{var}: 0`",
            )


def _position(doc: Document, path: DataPath, error: tuple[int, str]) -> tuple[int, int, str]:
    """The file position of a template's error, and the message to show there.

    A multi-line scalar (`|`, `>`, plain) is analysed again as it is written in the file:
    folding only turns line breaks into spaces, which Jinja reads alike inside a tag, so
    the same error comes back on its own line. When it does not, the error's line in the
    file is unknown; the block's first line is shown, and the message says so.
    """
    node = doc.node_at(path)
    line, column = doc.locate(path)
    if node is None or node.start_mark.line == node.end_mark.line:
        return line, column, error[1]
    start = node.start_mark
    again = _analyse_fast(_written(doc.text, node))[0]
    if again is None or again[1] != error[1]:
        style = getattr(node, "style", None)
        if style == "|":  # kept as written: the line is exact
            return *_line_start(doc.text, start.line + error[0]), error[1]
        where = "somewhere in this multi-line text; the folding hides the exact line"
        if style == ">":  # the block's first line
            return *_line_start(doc.text, start.line + 1), f"{error[1]} ({where})"
        return start.line + 1, start.column + 1, f"{error[1]} ({where})"
    if again[0] == 1:
        return start.line + 1, start.column + 1, error[1]
    return *_line_start(doc.text, start.line + again[0] - 1), error[1]


def _written(text: str, node: Any) -> str:
    """A scalar's text as the file writes it, line for line from its first mark."""
    start, end = node.start_mark, node.end_mark
    lines = text.splitlines()[start.line : end.line + 1]
    if len(lines) > end.line - start.line:  # the end mark is on a line of the file
        lines[-1] = lines[-1][: end.column]
    lines[0] = lines[0][start.column :]
    return "\n".join(lines)


def _line_start(text: str, index: int) -> tuple[int, int]:
    """Line `index` (0-based) of `text`, 1-based, at its first non-blank character."""
    lines = text.splitlines()
    if index >= len(lines):
        return len(lines), 1
    written = lines[index]
    return index + 1, len(written) - len(written.lstrip()) + 1


def _moved(diag: Diagnostic, line: int, column: int) -> Diagnostic:
    return replace(diag, line=line, column=column)


def not_returned(ctx: GraphContext, path: DataPath, name: str) -> Diagnostic:
    """A read of a sub-graph's slot that the sub-graph does not return (a warning: graphs
    written before slots belonged to their graph read them)."""
    file = ctx.dropped_slots[name]
    return ctx.diag(
        path,
        "slot-not-returned",
        f"`{name}` is a slot of the sub-graph `{file}`, which does not return it: it is "
        "gone when the sub-graph ends",
        f"list it under `returns:` in `{file}` (`returns: [{name}]`), or declare it here",
        warning=True,
    )
