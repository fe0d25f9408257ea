"""The messages waiting on one session in this process, in the order they came.

Each waits on the event loop, holding no thread: only the head of a session's queue goes
to the pool to take the store's lease (which a request of another process may still
hold). Were the waiters to wait in the pool, more of them than it has threads would take
every thread, and the turn they wait for could not commit: it would stall until they
gave up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from cgraph.errors import SessionBusy


@dataclass
class _Queue:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # its waiters are FIFO
    waiting: int = 0


class Queues:
    """One FIFO queue per session with a message in this process (created and dropped with
    its first and last waiter; used on one event loop)."""

    def __init__(self) -> None:
        self._queues: dict[str, _Queue] = {}

    @asynccontextmanager
    async def first(self, session_id: str, wait: float) -> AsyncIterator[float]:
        """At the head of `session_id`'s queue within `wait` seconds (else `SessionBusy`),
        while the context is open; it gives the seconds of the wait still left."""
        queue = self._queues.setdefault(session_id, _Queue())
        queue.waiting += 1
        loop = asyncio.get_running_loop()
        began = loop.time()
        try:
            try:
                async with asyncio.timeout(max(wait, 0.0)):
                    await queue.lock.acquire()
            except TimeoutError:
                raise SessionBusy.of(session_id) from None
            try:
                yield max(0.0, wait - (loop.time() - began))
            finally:
                queue.lock.release()
        finally:
            queue.waiting -= 1
            if not queue.waiting:
                del self._queues[session_id]

    def __len__(self) -> int:
        return len(self._queues)
