"""Replies shown as the model writes them, committed only once the answer is valid.

A backend that can stream has `stream(request)`, an iterator of the raw answer's text in
pieces (see `cgraph.runtime.ports.ChatModel`). While an action state's answer
arrives, its `reply` field is read out of the partial JSON (jiter's partial mode: a
well-kept parser, not a hand-written one) and passed on as it grows — once the `exit` is
known and keeps the reply (the model stays, or ends the conversation); the reply of a move
to another state is never shown. A state that offers tools streams every round: a round of
tool calls shows no text (the backend ends it with the `Whole` calls, assembled from their
deltas) but a `CallingTools` chunk names them while they run, and the answer that follows
streams like any other. The engine still validates
the whole answer before it commits anything; when it re-asks, a `Retracted` chunk says
that what was shown is withdrawn, and so does one (`failed`) when the model fails half way
through an answer (the turn's deadline passed, the stream broke or ran away) and the
fallback reply follows instead. No more of a reply is shown than a reply may hold.

Only action answers stream: decisions, reflections, memory extraction and summaries are
never shown to the user, so they are asked whole.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from cgraph.errors import LLMError
from cgraph.runtime.ask.answers import CAPS, tool_calls_of
from cgraph.runtime.ports import STAY, AsyncModel, ChatModel, LLMRequest, Whole
from cgraph.spec.names import END


@dataclass(frozen=True, slots=True)
class Delta:
    """More of the reply."""

    text: str


@dataclass(frozen=True, slots=True)
class Retracted:
    """The reply shown so far was rejected; the model is asked again (or, `failed`, the
    model failed before its answer was whole, and the turn's fallback reply follows)."""

    shown: str
    failed: bool = False


@dataclass(frozen=True, slots=True)
class CallingTools:
    """The model called these tools; they run before its answer streams."""

    names: tuple[str, ...]


Chunk = Delta | Retracted | CallingTools


def partial_answer(raw: str) -> tuple[str | None, str]:
    """The answer's `exit` once it is complete, and its `reply` so far, from partial JSON."""
    from jiter import from_json  # installed with litellm's OpenAI client

    text = raw.strip().encode()
    if not text.startswith(b"{"):
        return None, ""
    try:
        whole: Any = from_json(text, partial_mode=True)  # complete values only
        growing: Any = from_json(text, partial_mode="trailing-strings")
    except ValueError:
        return None, ""
    exit_id = whole.get("exit") if isinstance(whole, dict) else None
    reply = growing.get("reply") if isinstance(growing, dict) else None
    return (exit_id if isinstance(exit_id, str) else None), (
        reply if isinstance(reply, str) else ""
    )


class StreamingModel:
    """Wraps a model that can stream: action answers are streamed, their reply passed to
    `sink` as it grows; every other request is asked as usual."""

    def __init__(self, inner: ChatModel, sink: Callable[[Chunk], None]) -> None:
        self.inner, self.sink = inner, sink
        self.name = inner.name
        self.capabilities = inner.capabilities
        self.shown = ""

    def complete(self, request: LLMRequest) -> str:
        if request.kind != "action":  # not shown to the user: nothing to gain
            return str(self.inner.complete(request))
        self._again()
        raw = ""
        try:
            for piece in self.inner.stream(request):
                raw, whole = self._read(request, raw, piece)
                if whole is not None:
                    return whole
        except LLMError:
            self._broken()
            raise
        return raw

    async def acomplete(self, request: LLMRequest) -> str:
        """`complete`, awaited (the inner model `awaits`): the same pieces, the same sink."""
        inner = cast(AsyncModel, self.inner)
        if request.kind != "action":
            return str(await inner.acomplete(request))
        self._again()
        raw = ""
        try:
            async for piece in inner.astream(request):
                raw, whole = self._read(request, raw, piece)
                if whole is not None:
                    return whole
        except LLMError:
            self._broken()
            raise
        return raw

    def _again(self) -> None:
        """An answer was shown and another is asked for: a re-ask withdraws it."""
        if self.shown:
            self.sink(Retracted(self.shown))
            self.shown = ""

    def _broken(self) -> None:
        """No half answer may stand: the fallback reply comes instead."""
        if self.shown:
            self.sink(Retracted(self.shown, failed=True))
            self.shown = ""

    def _read(self, request: LLMRequest, raw: str, piece: str | Whole) -> tuple[str, str | None]:
        """The answer so far with `piece`, shown as it grows; and the whole answer once a
        `Whole` (tool calls, or the answer as built) ends it."""
        if isinstance(piece, Whole):
            self._calling(request, piece.text)
            return raw, piece.text
        raw += piece
        self._show(request, raw)
        return raw, None

    def astream(self, request: LLMRequest) -> AsyncIterator[str | Whole]:
        return cast(AsyncModel, self.inner).astream(request)

    def notices(self) -> tuple[str, ...]:
        return self.inner.notices()

    def begin_turn(self) -> None:
        self.inner.begin_turn()

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]:
        return self.inner.stream(request)

    def _calling(self, request: LLMRequest, raw: str) -> None:
        calls = tool_calls_of(raw) if request.tools else ()
        if calls:
            self.sink(CallingTools(tuple(call.name for call in calls)))

    def _show(self, request: LLMRequest, raw: str) -> None:
        exit_id, reply = partial_answer(raw)
        reply = reply[: CAPS["reply"]]  # the rest would be cut before the reply is kept
        if exit_id is None or not _keeps_reply(request, exit_id):
            return
        if reply.startswith(self.shown) and len(reply) > len(self.shown):
            self.sink(Delta(reply[len(self.shown) :]))
            self.shown = reply


def _keeps_reply(request: LLMRequest, exit_id: str) -> bool:
    if exit_id == STAY:
        return True
    return any(o.id == exit_id and o.target == END for o in request.options)


def can_stream(model: ChatModel | None) -> bool:
    return model is not None and model.capabilities.streams


def run_streamed(
    send: Callable[[Callable[[Chunk], None]], Any],
) -> Iterator[Chunk | Any]:
    """Run `send(sink)` in a worker thread, yielding what it passes to `sink` as it comes,
    then what `send` returned; an exception it raised is raised here."""
    chunks: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            chunks.put(("done", send(lambda chunk: chunks.put(("chunk", chunk)))))
        except BaseException as err:  # handed to the caller's thread
            chunks.put(("error", err))

    # the turn's thread runs in a copy of the caller's context: its watchers of model calls
    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(work,), name="cgraph-stream", daemon=True)
    worker.start()
    while True:
        kind, value = chunks.get()
        if kind == "chunk":
            yield value
            continue
        worker.join()
        if kind == "error":
            raise value
        yield value
        return


async def streamed(
    send: Callable[[Callable[[Chunk], None]], Awaitable[Any]],
) -> AsyncIterator[Chunk | Any]:
    """`run_streamed` on an event loop: `send(sink)` runs in a task, what it passes to
    `sink` (from the loop, or from a worker thread) is yielded as it comes, then what it
    returned; an exception it raised is raised here. The task is not cancelled when the
    caller stops reading: the turn goes on and is committed."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[Chunk] = asyncio.Queue()
    here = threading.get_ident()

    def sink(chunk: Chunk) -> None:
        if threading.get_ident() == here:
            chunks.put_nowait(chunk)
        else:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)

    task = asyncio.ensure_future(send(sink))
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    while not task.done():
        getter = asyncio.ensure_future(chunks.get())
        await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            yield getter.result()
        else:
            getter.cancel()
    await asyncio.sleep(0)  # a chunk a worker thread handed over just before the end
    while not chunks.empty():
        yield chunks.get_nowait()
    yield task.result()


_RUNNING: set[asyncio.Future[Any]] = set()
"""Streamed turns still running (kept so that none is collected midway)."""
