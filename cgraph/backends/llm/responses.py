"""A provider's response read, the same on the blocking and the awaited path: the answer's
text (the message content, or the answer function's arguments), whether the server cut it
at the token cap, and whether it is prose where a call was forced.
"""

from __future__ import annotations

import json
from typing import Any

from cgraph.errors import LLMError
from cgraph.runtime.ports import LLMRequest


def answer_text(response: Any, request: LLMRequest, name: str, max_tokens: int) -> str:
    """The answer's text; `LLMError` saying so when the server stopped it at the token
    cap before it was whole (a JSON answer that still parses is kept)."""
    text = content(response, request)
    if finish_reason(response) == "length" and not parses(text):
        raise LLMError(
            f"model `{name}` stopped at its cap of {max_tokens} tokens before its "
            "answer was complete (finish_reason: length); raise it with --max-tokens N or "
            "the graph's `model.max_tokens`"
        )
    return text


def content(response: Any, request: LLMRequest) -> str:
    """The answer's text: the message content, or the answer function's arguments; calls of
    offered tools come back as `{"tool_calls": [{"id", "name", "arguments"}]}`."""
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, KeyError, TypeError) as err:
        raise LLMError(f"the provider's response has no message: {response!r:.200}") from err
    calls = getattr(message, "tool_calls", None) or []
    answer = [c for c in calls if getattr(c.function, "name", None) == request.schema_name]
    if calls and (answer or not request.tools):  # no tools offered: the call is the answer
        return str((answer or calls)[0].function.arguments or "")
    if calls:
        found = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments or "{}"}
            for c in calls
        ]
        return json.dumps({"tool_calls": found})
    return str(message.content or "")


def prose(response: Any) -> bool:
    """An answer that calls no function and is not JSON: words where a call was forced."""
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, KeyError, TypeError):
        return False
    text = str(getattr(message, "content", None) or "").strip()
    return not getattr(message, "tool_calls", None) and bool(text) and not parses(text)


def finish_reason(response: Any) -> str | None:
    try:
        return str(response.choices[0].finish_reason)
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def parses(text: str) -> bool:
    try:
        json.loads(text, strict=False)
    except ValueError:
        return False
    return True
