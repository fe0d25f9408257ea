"""Sandboxed, bounded Jinja rendering for graph templates; the environments lint parses with.

Graph files are written by designers, not trusted code: every template renders in an
immutable sandbox (`cgraph.spec.sandbox`) with `StrictUndefined`, so a typo is an error,
not empty text. Every render has a budget: `RENDER_SECONDS` of time and
`MAX_VALUE_CHARS` of output, and any failure at all (a syntax error, an undefined name,
a sandbox refusal, a division by zero, runaway recursion, the budget) is one
`RenderError` naming the template and the cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache, lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, Undefined, nodes
from jinja2.nativetypes import NativeEnvironment, native_concat
from jinja2.parser import Parser
from jinja2.runtime import Context, new_context

from cgraph.errors import RenderError
from cgraph.spec.deadline import DeadlineExceeded, deadline
from cgraph.spec.limits import MAX_VALUE_CHARS, RENDER_SECONDS, not_utf8, too_large, unstorable
from cgraph.spec.sandbox import BoundedSandbox, LimitExceeded, fresh_budget

CLARIFICATIONS = "clarifications"
"""The clarifying questions asked in the current state since it was entered."""
# Names every graph template may use, besides the graph's own variables.
BUILTIN_NAMES = frozenset(
    {
        "message",  # the newest user message
        "user_id",
        "session_id",
        "turn",  # the turn number, from 1
        "state",  # the current state's id
        "graph",  # the graph's name
        "memories",  # texts recalled this turn
        "notes",  # reflection notes so far
        "annotations",  # transcript tags so far
        "vars",  # every variable, as a mapping
        "metadata",  # the current state's `message_metadata` tags
        "interrupted",  # the states open interruptions go back to, the next one last
        "resumed",  # the current state was entered this turn by a RESUME
        CLARIFICATIONS,  # clarifying questions asked in the current state
    }
)


class _NativeSandbox(NativeEnvironment, BoundedSandbox):
    """Sandboxed, but keeps Python values: `{{ flags + ['x'] }}` stays a list."""


def blank_unset(value: Any) -> Any:
    """What `{{ x }}` prints: an unset slot (null) is no text, never the word "None" a user
    would read ("So that's 4 None pizza(s)"). A lone `{{ x }}` in `set:` or a tool's
    arguments is a value, not printed text: it stays null."""
    return "" if value is None else value


def spoken(value: Any) -> Any:
    """What `{{ x }}` prints in text: `blank_unset`, and a list or a record (an `array` or
    `object` slot) as words, not Python's notation: the items joined by commas, a
    record's given fields by spaces ("lisinopril 10 mg once a day, vitamin D")."""
    if isinstance(value, dict):
        return " ".join(str(spoken(v)) for v in value.values() if v is not None)
    if isinstance(value, list | tuple):
        return ", ".join(str(spoken(v)) for v in value if v is not None)
    return blank_unset(value)


@cache
def text_env() -> BoundedSandbox:
    return BoundedSandbox(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=spoken,
    )


@cache
def native_env() -> BoundedSandbox:
    return _NativeSandbox(undefined=StrictUndefined, autoescape=False, finalize=blank_unset)


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


@lru_cache(maxsize=2048)
def _compiled(source: str, native: bool) -> Template:
    # Graph templates are few and rendered every turn: compile each once.
    return (native_env() if native else text_env()).from_string(source)


def render_text(source: str, context: Mapping[str, Any], *, seconds: float = RENDER_SECONDS) -> str:
    """Render a graph template to text; `RenderError` on any failure or over budget."""
    if not is_template(source):
        return source
    return _storable_text(source, "".join(_render(source, context, False, seconds)))


def render_value(
    source: Any, context: Mapping[str, Any], *, seconds: float = RENDER_SECONDS
) -> Any:
    """Render a template keeping its Python type (for `set:` and tool arguments).

    `RenderError` on any failure or over budget.
    """
    if not isinstance(source, str) or not is_template(source):
        return source
    lone = _lone(source)
    if lone is not None and _is_name(lone) and lone.strip() in context:
        value = context[lone.strip()]  # `{{ message }}`: the value itself, as Jinja gives it
    elif lone is not None:
        value = _evaluate(source, lone, context, seconds)
    else:
        value = native_concat(_render(source, context, True, seconds))
    if isinstance(value, Undefined):  # a lone `{{ name }}` returns its Undefined unrendered
        raise _error(source, "UndefinedError", f"{value._undefined_name!r} is undefined")
    inside = _undefined_inside(value)
    if inside is not None:  # `x | map(attribute="__class__") | list`: no text, no JSON
        raise _error(source, "UndefinedError", inside._undefined_message)
    if too_large(value):  # one piece, counted once by `_collect`: a whole list, say
        raise _error(source, "LimitExceeded", f"the value is over {MAX_VALUE_CHARS:,} characters")
    problem = unstorable(value)
    if problem is not None:  # the store's JSON would raise at commit, on every resume too
        raise _error(source, NOT_STORABLE, f"the value cannot be stored: {problem}")
    return value


def render_template(
    template: Template, context: Mapping[str, Any], *, seconds: float = RENDER_SECONDS
) -> str:
    """Render an already compiled template (a prompt loaded from a file, say) to text under
    the same budget; `RenderError` names it by its name. Its environment should be a
    `BoundedSandbox` for the size checks inside operations to apply too."""
    label = template.name or "<template>"
    return _storable_text(label, "".join(_run(lambda: template, context, seconds, label)))


NOT_STORABLE = "NotStorable"
"""The cause of a render whose result the session could not store (or send)."""


def _storable_text(source: str, text: str) -> str:
    """`text`, unless UTF-8 cannot encode it (a lone surrogate, `'\\ud800'`)."""
    problem = not_utf8(text)
    if problem is not None:
        raise _error(source, NOT_STORABLE, f"the text cannot be stored: {problem}")
    return text


# `"{{ amount }}"`: one expression, whose value is kept as it is. Jinja's native rendering
# would turn the text "150" into the number 150 (it `literal_eval`s its output).
_LONE = re.compile(r"^\{\{-?(?P<expr>.*?)-?\}\}$", re.DOTALL)


@lru_cache(maxsize=2048)
def _lone(source: str) -> str | None:
    """The expression of a template that is one `{{ expression }}`, else None."""
    lone = _LONE.match(source.strip())
    if lone and not is_template(lone["expr"]) and "}}" not in lone["expr"]:
        return lone["expr"]
    return None


# Names Jinja reads as constants or operators, not as a variable of the context.
_NOT_NAMES = frozenset({"true", "false", "none", "True", "False", "None"})
_NOT_NAMES |= {"and", "or", "not", "in", "is", "if", "else"}


@lru_cache(maxsize=2048)
def _is_name(expr: str) -> bool:
    """Whether an expression is one variable name, whose value needs no Jinja to read."""
    name = expr.strip()
    return name.isidentifier() and name.isascii() and name not in _NOT_NAMES


def truth(expr: str, context: Mapping[str, Any], *, seconds: float = RENDER_SECONDS) -> bool:
    """Whether one Jinja expression (a `when:` condition) is true, under the render budget;
    `RenderError` on any failure (an undefined name's is `UndefinedError`)."""
    return bool(_evaluate(expr, expr, context, seconds, bool))


def _evaluate(
    source: str,
    expr: str,
    context: Mapping[str, Any],
    seconds: float,
    convert: Callable[[Any], Any] = lambda value: value,
) -> Any:
    fresh_budget()
    try:
        with deadline(seconds):
            template = _expression(expr)
            scope = _new_context(template, context)
            for _ in template.root_render_func(scope):
                pass
            return convert(scope.vars["result"])
    except (DeadlineExceeded, Exception) as err:  # any error inside is the template's
        raise _failure(source, seconds, err) from err


def _failure(source: str, seconds: float, err: BaseException) -> RenderError:
    if isinstance(err, DeadlineExceeded):
        return _error(source, "timeout", f"took longer than {seconds:g}s")
    if isinstance(err, RecursionError):
        return _error(source, "RecursionError", "recursed too deeply")
    if isinstance(err, MemoryError):
        return _error(source, "MemoryError", "ran out of memory")
    return _error(source, type(err).__name__, str(err) or type(err).__name__)


@lru_cache(maxsize=2048)
def _expression(expr: str) -> Template:
    """`expr` as a template that stores its value in `result`: what Jinja's
    `compile_expression` builds, run here with the context every render gets."""
    env = native_env()
    parser = Parser(env, expr, state="variable")
    try:
        value = parser.parse_expression()
        if not parser.stream.eos:
            line = parser.stream.current.lineno
            raise TemplateSyntaxError("chunk after expression", line, None, None)
        value.set_environment(env)
    except TemplateSyntaxError:
        env.handle_exception(source=expr)
    body = [nodes.Assign(nodes.Name("result", "store"), value, lineno=1)]
    return env.from_string(nodes.Template(body, lineno=1))


def _render(source: str, context: Mapping[str, Any], native: bool, seconds: float) -> list[Any]:
    return _run(lambda: _compiled(source, native), context, seconds, source)


def _run(
    compiled: Callable[[], Template], context: Mapping[str, Any], seconds: float, source: str
) -> list[Any]:
    fresh_budget()
    try:
        with deadline(seconds):
            template = compiled()
            return _collect(template.root_render_func(_new_context(template, context)))
    except (DeadlineExceeded, Exception) as err:  # any error inside is the template's
        raise _failure(source, seconds, err) from err


def _new_context(template: Template, values: Mapping[str, Any]) -> Context:
    """What `template.new_context(values)` makes, without copying the template's globals
    (a `ChainMap`, iterated key by key) twice at every render."""
    names = _globals(template)
    return new_context(
        template.environment, template.name, template.blocks, {**names, **values}, True, names
    )


@lru_cache(maxsize=2048)
def _globals(template: Template) -> dict[str, Any]:
    # Compiled templates are cached and their globals never change after compiling.
    return dict(template.globals)


# Values with nothing inside: no Undefined hides in them.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _undefined_inside(value: Any) -> Undefined | None:
    """The first `Undefined` inside a list or mapping a template built (its text, or its
    JSON for the store, would raise)."""
    if type(value) in _SCALARS:
        return None
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, Undefined):
            return item
        if isinstance(item, list | tuple | set | frozenset | dict) and id(item) not in seen:
            seen.add(id(item))
            stack.extend([*item.keys(), *item.values()] if isinstance(item, dict) else item)
    return None


def _collect(pieces: Iterator[Any]) -> list[Any]:
    """The output as it streams, stopped once it passes `MAX_VALUE_CHARS`."""
    kept, total = [], 0
    for piece in pieces:
        total += len(piece) if type(piece) is str else 1
        if total > MAX_VALUE_CHARS:
            raise LimitExceeded(f"the output is over {MAX_VALUE_CHARS:,} characters")
        kept.append(piece)
    return kept


def _error(source: str, cause: str, detail: str) -> RenderError:
    shown = source if len(source) <= 80 else source[:77] + "..."
    return RenderError(f"template {shown!r} failed: {cause}: {detail}", source, cause)
