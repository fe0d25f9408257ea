"""Prompts: shipped Jinja templates (overridable per graph) rendered into chat messages.

Every request is laid out static → dynamic so providers' prompt caches hit:

1. one system message — agent core, graph, the state (objective, actions, guidelines,
   constraints, exits; the abstract topology for decisions and reflections) and the
   answer format. It only changes when the state (or a variable its texts use) changes;
2. the conversation history, a window bounded by *tokens* (`limits.history_tokens`);
3. one closing system message — recalled memories, reflection notes, variables and the
   task of this call — which changes every call.

Templates render twice, with `part="system"` and `part="context"`. A graph's `prompts:`
entry replaces a shipped template; it may `{% extends "action.j2" %}` and override only
blocks (`state`, `answer`, `task`, `context`). An override that neither extends nor uses
`part` is taken as the system part, and the shipped template supplies the context part.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, Template, TemplateError

from cgraph.errors import RenderError
from cgraph.errors import TemplateError as CgraphTemplateError
from cgraph.spec.sandbox import BoundedSandbox
from cgraph.spec.templating import blank_unset, render_template

TEMPLATES = Path(__file__).parent / "templates"
# Kinds that share a template: a graph state choosing its exit asks like a decision.
TEMPLATE_OF = {"graph": "decision"}


SUMMARY_HEADING = "Summary of the conversation before the messages below:"


def summary_message(text: str) -> dict[str, str]:
    """The running summary of older messages, as the message ahead of the history window."""
    return {"role": "system", "content": f"{SUMMARY_HEADING}\n{text}"}


@cache
def _environment() -> BoundedSandbox:
    # The format's bounded sandbox: an override with a nested loop or a huge string fails
    # within the render budget instead of hanging the turn.
    env = BoundedSandbox(
        loader=FileSystemLoader(str(TEMPLATES)),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=False,
        lstrip_blocks=False,
        # The shipped templates are package files that do not change while a process runs:
        # no `stat` of `_base.j2` at every `{% extends %}`.
        auto_reload=False,
        finalize=blank_unset,  # an override printing an unset slot shows no "None"
    )
    env.filters["json"] = lambda v: json.dumps(v, ensure_ascii=False, default=str)
    env.filters["tojson"] = env.filters["json"]  # plain JSON, not HTML-escaped
    return env


@cache
def _shipped(kind: str) -> Template:
    return _environment().get_template(f"{TEMPLATE_OF.get(kind, kind)}.j2")


def compile_shipped() -> None:
    """Compile every shipped template now (its first use would cost a turn 10-20 ms)."""
    for path in sorted(TEMPLATES.glob("[!_]*.j2")):
        _shipped(path.stem)


@cache
def _override(source: str) -> Template:
    return _environment().from_string(source)


def _splits(source: str) -> bool:
    return "extends" in source or "part" in source


SYSTEM_CACHE_SIZE = 512


def render_messages(
    kind: str,
    variables: Mapping[str, Any],
    history: Sequence[Mapping[str, str]],
    overrides: Mapping[Any, str] | None = None,
    *,
    system_key: Hashable | None = None,
    cache: dict[Hashable, str] | None = None,
) -> tuple[dict[str, str], ...]:
    """The chat messages of one request: system, history window, closing context.

    `system_key` identifies everything the shipped templates' system part reads (graph,
    state, kind, the state's rendered texts); with it and a `cache` (one per session) the
    system part is rendered once and reused. Overridden templates may read anything, so
    they are never cached.
    """
    source = (overrides or {}).get(TEMPLATE_OF.get(kind, kind))
    try:
        shipped = _shipped(kind)
        system_t = _override(source) if source else shipped
        context_t = system_t if source is None or _splits(source) else shipped
        key = None if source or cache is None else system_key
        system = _system(system_t, variables, key, cache if cache is not None else {})
        context = render_template(context_t, {**variables, "part": "context"}).strip()
    except RenderError:
        raise
    except TemplateError as err:
        raise CgraphTemplateError(f"the {kind} prompt template failed: {err}") from err
    messages = [{"role": "system", "content": system}]
    # The history's message dicts are shared, not copied (a long window made copying a
    # measurable cost): requests are read-only for backends.
    messages.extend(history)  # type: ignore[arg-type]
    if context:
        messages.append({"role": "system", "content": context})
    return tuple(messages)


def _system(
    template: Template,
    variables: Mapping[str, Any],
    key: Hashable | None,
    cache: dict[Hashable, str],
) -> str:
    cached = cache.get(key) if key is not None else None
    if cached is None:
        cached = render_template(template, {**variables, "part": "system"}).strip()
        if key is not None:
            if len(cache) >= SYSTEM_CACHE_SIZE:
                cache.clear()
            cache[key] = cached
    return cached
