"""Sandboxed Jinja environments shared by prompts, graph templates and lint.

Graph files are written by designers, not trusted code: every template renders in a
`SandboxedEnvironment` with `StrictUndefined`, so a typo is an error, not empty text.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template
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


@lru_cache(maxsize=2048)
def _compiled(source: str, native: bool) -> Template:
    # Graph templates are few and rendered every turn: compile each once.
    return (native_env() if native else text_env()).from_string(source)


def render_text(source: str, context: Mapping[str, Any]) -> str:
    """Render a graph template to text."""
    if not is_template(source):
        return source
    return _compiled(source, False).render(context)


def render_value(source: Any, context: Mapping[str, Any]) -> Any:
    """Render a template keeping its Python type (for `set:` and tool arguments)."""
    if not isinstance(source, str) or not is_template(source):
        return source
    return _compiled(source, True).render(context)
