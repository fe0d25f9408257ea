"""The PostgreSQL store's connections: a pool of this process's, each lent for one
statement or one transaction (so a turn waiting on a model holds none), opened when first
used and again after it was closed; a database error comes out as `StoreError`.

`AsyncConnections` is the same for one event loop (the server's): its statements are
awaited there, so a turn's commits and its lease take no thread and no hand-off of the
interpreter between the loop and a worker. Its connections are asyncpg's, whose protocol
is compiled: a served turn's five statements cost the loop about half the CPU psycopg's
async connection spent on them. The statements are written once, in psycopg's
placeholders (`%s`, `%(name)s`), and numbered for asyncpg (`numbered`); asyncpg takes
each parameter's type from the server, so a statement casts the ones it selects.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from functools import lru_cache
from typing import Any

import asyncpg
import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from cgraph.errors import StoreError

CONNECT_SECONDS = 10.0
WAIT_SECONDS = 30.0
"""How long a served statement waits for a free connection (psycopg's pool's default)."""
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")
_REFUSED = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)
"""What asyncpg raises for a statement the server refused or a connection it lost."""


class Connections:
    """The pool of connections to the database at `url` (`size` at most); `where` names
    it in messages, without its password."""

    def __init__(self, url: str, size: int, where: str) -> None:
        self.url, self.size, self.where = url, size, where
        self._open: ConnectionPool | None = None
        self._guard = threading.Lock()

    @property
    def _pool(self) -> ConnectionPool:
        """The pool; a closed one opens again when it is used."""
        with self._guard:
            if self._open is None:
                pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.size,
                    kwargs={"autocommit": True},
                    open=False,
                    name="cgraph",
                )
                try:
                    pool.open(wait=True, timeout=CONNECT_SECONDS)
                except psycopg.Error as err:
                    pool.close()
                    raise StoreError(f"cannot reach session store {self.where}: {err}") from err
                self._open = pool
            return self._open

    @contextmanager
    def connection(self, session_id: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, for one statement or transaction; a database error
        becomes `StoreError`."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except pg_errors.UniqueViolation as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        except psycopg.Error as err:
            raise StoreError(f"session store {self.where}: {err}") from err

    def fetch(self, query: str, args: Any, session_id: str | None = None) -> list[Any]:
        """The rows one statement answers."""
        with self.connection(session_id) as conn:
            return conn.execute(query, args).fetchall()

    def resize(self, size: int) -> None:
        """At most `size` connections from now on."""
        with self._guard:
            self.size = size
            if self._open is not None:
                self._open.resize(1, size)

    def close(self) -> None:
        """Close the pool (it opens again when used)."""
        with self._guard:
            if self._open is not None:
                self._open.close()
                self._open = None


class AsyncConnections:
    """`Connections` for the event loop `loop`: `size` at most, each opened when first
    needed; a caller finding none free waits its turn, first come first served.

    It is lean on purpose. A served turn borrows a connection four times (its lease
    taken, two commits, the lease let go), and psycopg's pool spent 70-130 us of the
    loop's CPU a borrowing on its locks, statistics and log records, as much as the
    statement itself (measured with 64 callers on 10 connections). Here a borrowing is
    a list's pop and append. A connection comes back to the idle list only when it is
    open and idle: one in a transaction or broken is closed, and its place is opened
    again by the next caller that needs one.
    """

    def __init__(self, url: str, size: int, where: str, loop: asyncio.AbstractEventLoop) -> None:
        self.url, self.size, self.where, self.loop = url, size, where, loop
        self.opened = 0
        """Connections opened so far (a count, for the tests and the curious)."""
        self._idle: list[asyncpg.Connection] = []  # the warmest last
        self._waiting: deque[asyncio.Future[asyncpg.Connection | None]] = deque()
        self._held = 0  # open, opening or lent
        self._closed = False

    @asynccontextmanager
    async def connection(self, session_id: str | None = None) -> AsyncIterator[asyncpg.Connection]:
        """`Connections.connection`, awaited."""
        conn = await self._borrowed()
        try:
            yield conn
        except asyncpg.UniqueViolationError as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        except _REFUSED as err:
            raise StoreError(f"session store {self.where}: {err}") from err
        finally:
            await self._returned(conn)

    async def fetch(self, query: str, args: Any, session_id: str | None = None) -> list[Any]:
        """The rows one statement answers."""
        async with self.connection(session_id) as conn:
            return await rows(conn, query, args)

    async def _borrowed(self) -> asyncpg.Connection:
        while True:
            if self._closed:
                raise StoreError(f"session store {self.where}: its connections are closed")
            if self._idle:
                return self._idle.pop()
            if self._held < self.size:
                return await self._opened()
            waiter: asyncio.Future[asyncpg.Connection | None] = self.loop.create_future()
            self._waiting.append(waiter)
            try:
                async with asyncio.timeout(WAIT_SECONDS):
                    conn = await waiter
            except BaseException as err:
                if waiter.done() and not waiter.cancelled():  # handed over as it left
                    handed = waiter.result()
                    if handed is None:
                        self._hand(None)
                    else:
                        await self._returned(handed)
                waiter.cancel()
                if isinstance(err, TimeoutError):
                    raise StoreError(
                        f"session store {self.where}: no connection free within {WAIT_SECONDS:g} s"
                    ) from None
                raise
            if conn is not None:
                return conn
            # None: a connection was closed, and its place is this caller's to open.

    async def _opened(self) -> asyncpg.Connection:
        self._held += 1
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                conn = await asyncpg.connect(self.url)
        except BaseException as err:
            self._held -= 1
            self._hand(None)
            if isinstance(err, TimeoutError):
                raise StoreError(
                    f"cannot reach session store {self.where}: no answer within "
                    f"{CONNECT_SECONDS:g} s"
                ) from None
            if isinstance(err, (*_REFUSED, ValueError)):  # ValueError: a URL it cannot read
                raise StoreError(f"cannot reach session store {self.where}: {err}") from err
            raise
        self.opened += 1
        return conn

    async def _returned(self, conn: asyncpg.Connection) -> None:
        if self._closed or conn.is_closed() or conn.is_in_transaction():
            self._held -= 1
            conn.terminate()  # no goodbye to a server that may be gone or mid-statement
            self._hand(None)
            return
        self._hand(conn)

    def _hand(self, conn: asyncpg.Connection | None) -> None:
        """`conn` (or, when None, a place to open one) to the first caller still waiting;
        to the idle list when none is."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        if conn is not None:
            self._idle.append(conn)

    async def close(self) -> None:
        """Close the idle connections; those lent out are closed as they come back."""
        self._closed = True
        idle, self._idle = self._idle, []
        self._held -= len(idle)
        for conn in idle:
            await conn.close()
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # wakes to find the store closed


async def rows(conn: asyncpg.Connection, query: str, args: Any) -> list[Any]:
    """The rows `query` (psycopg's placeholders) answers with `args` on `conn`."""
    text, names = numbered(query)
    if isinstance(args, Mapping):
        return await conn.fetch(text, *(args[name] for name in names))  # type: ignore[no-any-return]
    return await conn.fetch(text, *args)  # type: ignore[no-any-return]


@lru_cache(maxsize=256)
def numbered(query: str) -> tuple[str, tuple[str, ...]]:
    """`query` with psycopg's placeholders numbered as asyncpg's (`$1`, ...), and the
    names of its `%(name)s` ones in their order (a name used twice is one number)."""
    names: list[str] = []
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        name = match.group(1)
        if match.group(0) == "%%":
            return "%"
        if name is None:
            count += 1
            return f"${count}"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    text = _PLACEHOLDER.sub(number, query)
    if names and count:
        raise ValueError("a statement mixes %s and %(name)s placeholders")
    return text, tuple(names)
