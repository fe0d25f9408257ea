"""A streamed turn, read as an async iterator of what it emits: from its worker thread
(`bridged`: chunks of `/v1/chat/completions`), or from its task on the event loop
(`awaited_bridge`: server-sent events of `/messages:stream`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.from_thread

from cgraph.serve.service import Emit


class Running(Protocol):
    """What a request offers to run work in a thread (`cgraph.serve.app.Call`)."""

    async def run(self, function: Callable[..., Any], *args: Any) -> Any: ...

    def started(self, task: asyncio.Future[None]) -> None: ...


async def bridged(call: Running, work: Callable[[Emit], Any]) -> AsyncIterator[tuple[str, Any]]:
    """`work(emit)` run in a worker thread (counted in flight until done), what it emits
    as (kind, data) pairs, then `("failed", {"error": …})` if it raised. The turn goes on
    when the reader stops reading."""
    send_end, receive_end = anyio.create_memory_object_stream[tuple[str, Any]](64)

    def emit(kind: str, data: dict[str, Any]) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            anyio.from_thread.run(send_end.send, (kind, data))  # gone: the turn goes on

    def worked() -> None:
        try:
            work(emit)
        except BaseException as error:
            emit("failed", {"error": error})
        finally:
            anyio.from_thread.run_sync(send_end.close)

    async def turn_in_thread() -> None:
        await call.run(worked)

    async def pieces() -> AsyncIterator[tuple[str, Any]]:
        try:
            async for piece in receive_end:
                yield piece
        finally:
            receive_end.close()

    call.started(asyncio.ensure_future(turn_in_thread()))
    return pieces()


async def awaited_bridge(
    call: Running, work: Callable[[Emit], Awaitable[Any]]
) -> AsyncIterator[tuple[str, Any]]:
    """`bridged` for a turn on the event loop: `work(emit)` runs in a task (counted in
    flight until done), what it emits as (kind, data) pairs, then `("failed", {"error":
    …})` if it raised. The turn goes on when the reader stops reading."""
    found: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()

    def emit(kind: str, data: dict[str, Any]) -> None:
        found.put_nowait((kind, data))

    async def worked() -> None:
        try:
            await work(emit)
        except BaseException as error:  # reported to the reader, as the thread's is
            emit("failed", {"error": error})
        finally:
            found.put_nowait(None)

    async def pieces() -> AsyncIterator[tuple[str, Any]]:
        while (piece := await found.get()) is not None:
            yield piece

    call.started(asyncio.ensure_future(worked()))
    return pieces()
