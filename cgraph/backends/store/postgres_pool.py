"""The PostgreSQL store's connections: a pool of this process's, each lent for one
statement or one transaction (so a turn waiting on a model holds none), opened when first
used and again after it was closed; a database error comes out as `StoreError`.

`AsyncConnections` is the same for one event loop (the server's): its statements are
awaited there, so a turn's commits and its lease take no thread and no hand-off of the
interpreter between the loop and a worker.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from cgraph.errors import StoreError

CONNECT_SECONDS = 10.0


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
    """`Connections` for the event loop `loop`: `size` at most, opened when first awaited."""

    def __init__(self, url: str, size: int, where: str, loop: asyncio.AbstractEventLoop) -> None:
        self.url, self.size, self.where, self.loop = url, size, where, loop
        self._open: AsyncConnectionPool | None = None
        self._opening = asyncio.Lock()

    async def _pool(self) -> AsyncConnectionPool:
        if self._open is not None:  # the lock only for its first opening
            return self._open
        async with self._opening:
            if self._open is None:
                pool = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.size,
                    kwargs={"autocommit": True},
                    open=False,
                    name="cgraph-loop",
                )
                try:
                    await pool.open(wait=True, timeout=CONNECT_SECONDS)
                except psycopg.Error as err:
                    await pool.close()
                    raise StoreError(f"cannot reach session store {self.where}: {err}") from err
                self._open = pool
            return self._open

    @asynccontextmanager
    async def connection(
        self, session_id: str | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """`Connections.connection`, awaited."""
        pool = await self._pool()
        try:
            async with pool.connection() as conn:
                yield conn
        except pg_errors.UniqueViolation as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        except psycopg.Error as err:
            raise StoreError(f"session store {self.where}: {err}") from err

    async def fetch(self, query: str, args: Any, session_id: str | None = None) -> list[Any]:
        """The rows one statement answers."""
        async with self.connection(session_id) as conn:
            cursor = await conn.execute(query, args)
            return await cursor.fetchall()

    async def close(self) -> None:
        if self._open is not None:
            await self._open.close()
            self._open = None
