"""The runtime of the example `request_lifecycle.yaml`: a deterministic, in-memory executor.

It stands in for OpenBotStack's runtime delegation: every call is pure, so the example
runs offline and each outcome is reproducible from the request text alone.
"""

from __future__ import annotations

from typing import Any

_SKILLS = {
    "summar": "summary: three key points extracted",
    "translat": "translation: done into the requested language",
    "schedul": "schedule: meeting proposed for Tuesday 10:00",
    "remind": "reminder: set",
    "convert": "conversion: units converted",
}


def execute_step(request: str, plan: str = "", attempt: int = 1) -> dict[str, Any]:
    """Run one step of a request. Unknown skills fail; "flaky" requests succeed on retry."""
    text = request.lower()
    skill = next((output for key, output in _SKILLS.items() if key in text), None)
    if skill is None:
        raise LookupError(f"no skill can handle {request!r}")
    complete = "flaky" not in text or attempt >= 2
    return {
        "complete": complete,
        "output": skill if complete else "partial result, the step should be retried",
        "attempt": attempt,
        "plan": plan,
    }
