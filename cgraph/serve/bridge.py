"""A streamed turn, read as an async iterator of what it emits from its task on the event
loop (`awaited_bridge`: the server-sent events of `/messages:stream` and the chunks of
`/v1/chat/completions`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from cgraph.serve.service import Emit


class Running(Protocol):
    """What a request offers to run work in a thread (`cgraph.serve.app.Call`)."""

    async def run(self, function: Callable[..., Any], *args: Any) -> Any: ...

    def started(self, task: asyncio.Future[None]) -> None: ...


async def awaited_bridge(
    call: Running, work: Callable[[Emit], Awaitable[Any]]
) -> AsyncIterator[tuple[str, Any]]:
    """`work(emit)` run in a task (counted in flight until done), what it emits as (kind,
    data) pairs, then `("failed", {"error": …})` if it raised. The turn goes on when the
    reader stops reading."""
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
