"""What the user reads when a turn ends without the model's words.

Two cases: the session ends and the model gave no parting words (the ending action
state's `say:` is the closing when the user has not read it yet, else a plain goodbye),
and a guard stops the turn in the
last user-facing state (its `say:` again, inside its fallback reply:
`cgraph.runtime.routes.failures.fallback`). A `say:` that fails
to render is logged (`render_failed`) and replaced by the fallback: the functions return
the text and the log entries, and the engine applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cgraph.runtime.ask.requests import authored_reply
from cgraph.runtime.routes.failures import StepRenderFailed, fallback_reply, rendered
from cgraph.runtime.state.outcomes import Effects
from cgraph.spec.model import AnyState, Graph

Templates = Callable[[], dict[str, Any]]
"""The template context of the current state, built only when a `say:` is rendered."""


GOODBYE = "Goodbye."
"""The closing of a session that ends with nothing else to say: no parting words from the
model, no `say:` on the ending state, no silent state's line this turn."""


def closing(
    graph: Graph,
    state: AnyState | None,
    said: bool,
    here: str,
    templates: Templates,
    fresh: bool = False,
) -> tuple[str, Effects]:
    """With no parting words from the model: the ending action state's `say:` when it was
    entered this turn (`fresh`: the user has not read its words; a closing state left at
    once says its goodbye once); else nothing when a silent state spoke this turn (`said`:
    its line is in the reply); else `GOODBYE`. A state's `say:` the user read on an earlier
    turn is never said again as the closing: it was its opening line ("Hello! How can I
    help?"), not a goodbye."""
    if state is None or state.type != "action" or not state.say or not fresh:
        return ("" if said else GOODBYE), ()
    text, failed = said_by(state, here, templates)
    return (fallback_reply(graph, state) if text is None else text), failed


def said_by(state: AnyState | None, here: str, templates: Templates) -> tuple[str | None, Effects]:
    """The state's own words rendered for the user, or None and the logged failure."""
    try:
        return rendered(here, "say", lambda: authored_reply(state, templates(), here)), ()
    except StepRenderFailed as failure:
        return None, (failure.event,)
