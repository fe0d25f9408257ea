"""What a process may watch of the library's work without instrumenting it: each call of a
language model, reported by the backend that made it (its model, mode, time, tokens and
attempts). The server's metrics and traces and `cgraph run --trace` watch it.

Watchers are held in a context variable, so a turn's calls reach the watchers of the
request (or thread) that runs the turn and no other. Where nobody watches, a call costs one
lookup; a watcher that raises is ignored: watching never fails a turn.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from cgraph.runtime.ports import estimate_tokens

PURPOSES = {"extract": "extraction", "summary": "summary"}
"""What a call was for, by the kind of its question (any other kind: `turn`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One answer asked of a language model, retries included."""

    model: str
    kind: str
    """What was asked (`decision`, `action`, `extract`, `summary`, …)."""
    state: str
    """The qualified id of the state that asked."""
    mode: str = ""
    """How the answer's schema was sent (`json_schema`, `tool`, `json_object`), if known."""
    streamed: bool = False
    started: float
    """Unix time."""
    seconds: float
    attempts: int = 1
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    """The error's class name when the call failed."""
    messages: tuple[dict[str, Any], ...] = ()
    """The prompt as sent (a watcher decides whether to keep it)."""
    reply: str | None = None

    @property
    def purpose(self) -> str:
        """`turn` (a step of the turn), `extraction` (memories, once the reply is committed)
        or `summary` (the history's running summary)."""
        return PURPOSES.get(self.kind, "turn")

    def usage(self) -> tuple[int, int]:
        """(prompt, completion) tokens: the provider's counts where it gave them, else
        cgraph's estimate (`estimate_tokens`, ~4 characters a token) of the prompt sent and
        the reply read. A call that failed counts what the provider said, else 0: no
        answer came to estimate."""
        prompt, completion = self.prompt_tokens, self.completion_tokens
        if prompt is None:
            estimated = sum(estimate_tokens(_text(m.get("content"))) for m in self.messages)
            prompt = 0 if self.error else estimated
        if completion is None:
            completion = 0 if self.error or self.reply is None else estimate_tokens(self.reply)
        return prompt, completion


def _text(content: Any) -> str:
    """A message's content as text (parts keep their text)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


Watcher = Callable[[ModelCall], None]
_WATCHERS: ContextVar[tuple[Watcher, ...]] = ContextVar("cgraph_model_watchers", default=())


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Report every model call made in this context (and the threads it starts with a copy
    of it) to `watcher`, besides the watchers already there."""
    token = _WATCHERS.set((*_WATCHERS.get(), watcher))
    try:
        yield
    finally:
        _WATCHERS.reset(token)


@dataclass(slots=True)
class Noted:
    """What a backend learns during a call and notes for the report."""

    mode: str = ""
    attempts: int = 1
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reply: str | None = None

    def done(self, mode: str, attempts: int, response: Any, reply: str) -> None:
        """The call answered `reply` in `response` (its `usage`, where it has one, gives the
        token counts) after `attempts` requests sent in `mode`."""
        self.mode, self.attempts, self.reply = mode, attempts, reply
        usage = getattr(response, "usage", None)
        self.prompt_tokens = _count(getattr(usage, "prompt_tokens", None))
        self.completion_tokens = _count(getattr(usage, "completion_tokens", None))


@contextmanager
def model_call(
    model: str,
    kind: str,
    state: str,
    messages: tuple[dict[str, Any], ...],
    *,
    streamed: bool = False,
) -> Iterator[Noted]:
    """Around one call of a model: the backend notes what it learns in the `Noted` given,
    and the watchers get the `ModelCall` when the block ends, failed or not."""
    watchers = _WATCHERS.get()
    noted = Noted()
    if not watchers:
        yield noted
        return
    started, clock = time.time(), time.perf_counter()
    error: str | None = None
    try:
        yield noted
    except BaseException as err:
        error = type(err).__name__
        raise
    finally:
        call = ModelCall(
            model=model,
            kind=kind,
            state=state,
            mode=noted.mode,
            streamed=streamed,
            started=started,
            seconds=time.perf_counter() - clock,
            attempts=noted.attempts,
            prompt_tokens=noted.prompt_tokens,
            completion_tokens=noted.completion_tokens,
            error=error,
            messages=messages,
            reply=noted.reply,
        )
        for watcher in watchers:
            with contextlib.suppress(Exception):  # watching never fails a turn
                watcher(call)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
