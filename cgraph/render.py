"""Sandboxed Jinja environments shared by prompts, graph templates and lint.

Graph files are written by designers, not trusted code: every template renders in a
`SandboxedEnvironment` with `StrictUndefined`, so a typo is an error, not empty text.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import StrictUndefined
from jinja2.nativetypes import NativeEnvironment
from jinja2.sandbox import SandboxedEnvironment

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
    }
)


class _NativeSandbox(NativeEnvironment, SandboxedEnvironment):
    """Sandboxed, but keeps Python values: `{{ flags + ['x'] }}` stays a list."""


@cache
def text_env() -> SandboxedEnvironment:
    return SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
    )


@cache
def native_env() -> SandboxedEnvironment:
    return _NativeSandbox(undefined=StrictUndefined, autoescape=False)


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def render_text(source: str, context: dict[str, Any]) -> str:
    """Render a graph template to text."""
    if not is_template(source):
        return source
    return text_env().from_string(source).render(context)


def render_value(source: Any, context: dict[str, Any]) -> Any:
    """Render a template keeping its Python type (for `set:` and tool arguments)."""
    if not isinstance(source, str) or not is_template(source):
        return source
    return native_env().from_string(source).render(context)
