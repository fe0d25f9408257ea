"""Reading a provider's streamed answer: shared by the blocking and the awaited path."""

from __future__ import annotations

from typing import Any

from cgraph.backends.llm.failures import Failure
from cgraph.errors import LLMError
from cgraph.runtime.ports import LLMRequest

MAX_STREAMED_CHARS = 100_000
"""Longest streamed answer read. An answer's texts are capped at a few thousand characters
(`cgraph.runtime.ask.answers.CAPS`); a stream past this is a runaway, stopped with an error."""


def chars(chunk: Any) -> int:
    """How much text a streamed chunk carries: its content and every call's arguments."""
    try:
        delta = chunk.choices[0].delta
    except (AttributeError, IndexError, KeyError, TypeError):
        return 0
    calls = getattr(delta, "tool_calls", None) or ()
    arguments = (getattr(c.function, "arguments", None) or "" for c in calls)
    return len(str(getattr(delta, "content", None) or "")) + sum(len(str(a)) for a in arguments)


def failed(name: str, failure: Failure, attempt: int, api_base: str | None = None) -> LLMError:
    if failure.meaning == "unreachable":  # not retried: nobody listens there
        where = failure.url or api_base or "its default address"
        return LLMError(
            f"model `{name}`: cannot reach its server at {where} (connection refused); "
            "start the server, or check --api-base",
            permanent=True,
        )
    tries = f" after {attempt + 1} attempts" if attempt else ""
    permanent = failure.meaning not in ("transient", "timeout")
    return LLMError(f"model `{name}` failed{tries}: {failure.cause}", permanent=permanent)


def piece(chunk: Any, request: LLMRequest, names: dict[int, str], *, content: bool) -> str:
    """A streamed chunk's answer text: content (unless a call was forced: then content is
    no answer, and showing it would garble the answer asked for next), or the answer
    call's argument text. A call's name comes only in its first delta: `names` keeps it
    by the call's index."""
    try:
        delta = chunk.choices[0].delta
    except (AttributeError, IndexError, KeyError, TypeError):
        return ""
    text = ""
    for call in getattr(delta, "tool_calls", None) or ():
        index = getattr(call, "index", 0) or 0
        name = getattr(call.function, "name", None)
        if name:
            names[index] = name
        if names.get(index) == request.schema_name or not request.tools:
            text += str(getattr(call.function, "arguments", None) or "")
    return text + (str(getattr(delta, "content", None) or "") if content else "")


class Gathered:
    """A streamed answer's chunks as they are read: kept (the whole answer is built from
    them), counted (a stream past `MAX_STREAMED_CHARS` is a runaway, stopped), and each
    one's piece of the answer's text (`piece`)."""

    def __init__(self, name: str, request: LLMRequest, *, content: bool) -> None:
        self.name, self.request, self.content = name, request, content
        self.chunks: list[Any] = []
        self._names: dict[int, str] = {}
        self._size = 0

    def add(self, chunk: Any) -> str:
        """Keep `chunk`; its piece of the answer's text, "" for none."""
        self.chunks.append(chunk)
        self._size += chars(chunk)
        if self._size > MAX_STREAMED_CHARS:
            raise LLMError(
                f"model `{self.name}` streamed more than {MAX_STREAMED_CHARS:,} "
                "characters; stopped reading its answer"
            )
        return piece(chunk, self.request, self._names, content=self.content)
