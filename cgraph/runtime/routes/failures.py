"""A template that failed while a step ran: one audited `render_failed` event, and a stop.

Any failure of a render (`RenderError`, `ValueTooLarge`, anything else a render raised)
ends the turn in the last user-facing state with its fallback reply; the event says which
state and field failed and why. The turn is committed like any other, so a resumed session
moves on instead of running the failed step again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from cgraph.errors import CgraphError
from cgraph.runtime.state.outcomes import Emit, Stop
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.templating import is_template, render_text

T = TypeVar("T")


class StepRenderFailed(CgraphError):
    """A render of one step's `field` failed; `event` is what the log records of it."""

    def __init__(self, state: str, field: str, error: BaseException) -> None:
        cause = getattr(error, "cause", "") or type(error).__name__
        detail = getattr(error, "message", "") or str(error) or cause
        super().__init__(f"`{field}` of state `{state}` failed to render: {detail}")
        self.event = Emit(
            "render_failed", {"state": state, "field": field, "cause": cause, "error": detail}
        )


def rendered(state: str, field: str, render: Callable[[], T]) -> T:
    """`render()`, with any failure raised as `StepRenderFailed` naming state and field."""
    try:
        return render()
    except StepRenderFailed:
        raise
    except Exception as err:  # any render failure is the graph's, never a crash
        raise StepRenderFailed(state, field, err) from err


def failed_step(failure: StepRenderFailed, *before: Any) -> Stop:
    """The outcome of a step whose render failed: stop with the fallback reply."""
    return Stop(None, failure.message, effects=(*before, failure.event))


DEFAULT_FALLBACK = str(next(f.default for f in fields(Graph) if f.name == "fallback"))
"""What the user reads when the graph's own fallback is a template that fails too."""


def fallback(
    graph: Graph, state: AnyState | None, here: str, context: Mapping[str, Any], authored: str = ""
) -> tuple[str, tuple[Emit, ...]]:
    """The fallback reply (`cgraph.runtime.ask.exchange.fallback_reply`) and, when its template
    fails, the `render_failed` event: the reply is then the graph's fallback if it is
    plain text, else the format's default. The template's source is never the reply."""

    def render() -> str:
        return fallback_reply(graph, state, authored, context=context)

    try:
        return rendered(here, "fallback", render), ()
    except StepRenderFailed as failure:
        plain = graph.fallback if not is_template(graph.fallback) else DEFAULT_FALLBACK
        return plain, (failure.event,)


def fallback_reply(
    graph: Graph,
    state: AnyState | None,
    authored: str = "",
    *,
    context: Mapping[str, Any] | None = None,
) -> str:
    """What the user reads when the model fails or a guard stops the turn: the state's own
    `fallback:`, else `authored` (a stopped turn repeats its state's words), else the
    graph's fallback. A fallback is a template, rendered with `context`; `RenderError`
    when it fails (`cgraph.runtime.routes.failures.fallback` then says something plain)."""
    own = state.fallback if state is not None else None  # every state may have one
    text = own or authored or graph.fallback
    if context is None or not is_template(text):
        return text
    return render_text(text, context).strip() or graph.fallback
