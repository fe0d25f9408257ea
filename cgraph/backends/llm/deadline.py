"""Provider calls and streamed answers bounded by a turn's deadline.

An HTTP client's timeout is per read: a server that trickles a body, or streams a word
every few seconds, never trips it. So a call runs in a thread that is abandoned at the
deadline, and a stream is read by a thread that is no longer waited for at the deadline
and closes the response once its read returns.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Generator
from typing import Any


class CallTimeout(Exception):
    """A call outlived the turn's deadline (the HTTP client's own timeout did not fire)."""


def call_within(completion: Callable[..., Any], args: dict[str, Any], seconds: float) -> Any:
    """`completion(**args)`, abandoned after `seconds` even if the server trickles bytes
    (the HTTP client's timeout is per read, so a slow stream never trips it)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = completion(**args)
        except BaseException as err:  # handed to the caller's thread as it is
            box["error"] = err
        finally:
            done.set()

    threading.Thread(target=run, name="cgraph-llm-call", daemon=True).start()
    if not done.wait(seconds):
        raise CallTimeout(f"no answer within {seconds:.1f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def read_within(response: Any, left: Callable[[], float]) -> Generator[Any, None, None]:
    """The chunks of a streamed `response` until `left()` seconds run out (`CallTimeout`).

    The HTTP client's timeout is per read, so a server that sends a word every few seconds
    never trips it: a reader thread reads, and this waits for it no longer than `left()`.
    Once this generator is closed the reader stops and closes the response when its read
    returns: at the next word, or for a stalled server at the client's per-read timeout
    (never longer than the turn's timeout; closing a socket from another thread would not
    wake a read blocked on it)."""
    found: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def read() -> None:
        try:
            for chunk in response:
                if stop.is_set():
                    break
                found.put(("chunk", chunk))
            found.put(("end", None))
        except BaseException as err:  # handed to the caller's thread as it is
            found.put(("error", err))
        finally:
            _close(response)

    threading.Thread(target=read, name="cgraph-llm-stream", daemon=True).start()
    try:
        while True:
            try:
                kind, value = found.get(timeout=max(left(), 0.0))
            except queue.Empty:
                raise CallTimeout("the stream outlived the turn's deadline") from None
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()


def _close(response: Any) -> None:
    """Close a litellm stream and the HTTP response under it (a sync stream has no
    `close` of its own; the provider's stream inside it has)."""
    for part in (getattr(response, "completion_stream", None), response):
        close = getattr(part, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # already closed, or half torn down
                close()
