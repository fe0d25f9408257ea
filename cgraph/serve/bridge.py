"""A turn streamed from its worker thread to the event loop: what the thread emits, read
as an async iterator (server-sent events of `/messages:stream`, chunks of
`/v1/chat/completions`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
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
