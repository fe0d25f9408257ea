"""A template that failed while a step ran: one audited `render_failed` event, and a stop.

Any failure of a render (`RenderError`, `ValueTooLarge`, anything else a render raised)
ends the turn in the last user-facing state with its fallback reply; the event says which
state and field failed and why. The turn is committed like any other, so a resumed session
moves on instead of running the failed step again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from cgraph.errors import CgraphError
from cgraph.runtime.outcomes import Emit, Stop

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
