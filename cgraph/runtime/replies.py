"""What the user reads when a turn ends without the model's words.

Two cases: the session ends in an action state the user has not heard yet (its `say:` is
the closing), and a guard stops the turn in the last user-facing state (its `say:` again,
inside its fallback reply: `cgraph.runtime.render_failures.fallback`). A `say:` that fails
to render is logged (`render_failed`) and replaced by the fallback: the functions return
the text and the log entries, and the engine applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cgraph.runtime.asking import fallback_reply
from cgraph.runtime.outcomes import Effects
from cgraph.runtime.prompting import authored_reply
from cgraph.runtime.render_failures import StepRenderFailed, rendered
from cgraph.spec.model import AnyState, Graph

Templates = Callable[[], dict[str, Any]]
"""The template context of the current state, built only when a `say:` is rendered."""


def closing(
    graph: Graph, state: AnyState | None, entered: bool, here: str, templates: Templates
) -> tuple[str, Effects]:
    """With no parting words from the model: the ending action state's `say:` when this
    turn entered it (the user has not read it yet); else nothing, as it was said on entry
    (a silent state's `say:` is already in the turn's lines)."""
    if state is None or state.type != "action" or not state.say or not entered:
        return "", ()
    text, failed = said(state, here, templates)
    return (fallback_reply(graph, state) if text is None else text), failed


def said(state: AnyState | None, here: str, templates: Templates) -> tuple[str | None, Effects]:
    """The state's own words rendered for the user, or None and the logged failure."""
    try:
        return rendered(here, "say", lambda: authored_reply(state, templates(), here)), ()
    except StepRenderFailed as failure:
        return None, (failure.event,)
