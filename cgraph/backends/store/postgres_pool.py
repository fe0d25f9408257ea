"""The PostgreSQL store's connections: a pool of this process's, each lent for one
statement or one transaction (so a turn waiting on a model holds none), opened when first
used and again after it was closed; a database error comes out as `StoreError`.

`AsyncConnections` is the same for one event loop (the server's): its statements are
awaited there, so a turn's commits and its lease take no thread and no hand-off of the
interpreter between the loop and a worker. Its connections are asyncpg's, whose protocol
is compiled: a served turn's statements cost the loop about half the CPU psycopg's
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
from contextlib import asynccontextmanager, contextmanager, suppress
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from cgraph.errors import StoreError

CONNECT_SECONDS = 10.0
WAIT_SECONDS = 30.0
"""How long a served statement waits for a free connection (psycopg's pool's default)."""
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")
_REFUSED = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError)
"""What asyncpg raises for a statement the server refused, a connection it lost or could
not open (`InternalClientError`: no host of the URL's `target_session_attrs`)."""
CLOSE_SECONDS = 2.0
_LIBPQ_ONLY = frozenset(
    {
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "gssencmode",
        "channel_binding",
        "sslcompression",
        "sslsni",
        "requirepeer",
        "require_auth",
        "gssdelegation",
        "hostaddr",
        "load_balance_hosts",
    }
)
"""Parameters of a store's URL that libpq reads and asyncpg does not: asyncpg would send
them to the server as settings, which refuses them. Left to the blocking connections."""


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
    a list's pop and append. A connection is lent again only when it is open and idle:
    one in a transaction, broken, or left by an error of the driver's own is closed, and
    its place goes to the first caller waiting (who opens a connection in it), else back
    to the pool. `close` closes what is idle and what comes back; a caller after it
    opens new connections, as the blocking pool reopens.
    """

    def __init__(self, url: str, size: int, where: str, loop: asyncio.AbstractEventLoop) -> None:
        self.url, self.size, self.where, self.loop = url, size, where, loop
        self._dsn, self._connect_seconds = for_asyncpg(url)
        self.opened = 0
        """Connections opened so far (a count, for the tests and the curious)."""
        self._idle: list[asyncpg.Connection] = []  # the warmest last
        self._waiting: deque[asyncio.Future[asyncpg.Connection | None]] = deque()
        self._held = 0  # places taken: open, opening or lent connections
        self._born: dict[asyncpg.Connection, int] = {}  # each connection's generation
        self._generation = 0  # one more at each `close`

    @asynccontextmanager
    async def connection(self, session_id: str | None = None) -> AsyncIterator[asyncpg.Connection]:
        """`Connections.connection`, awaited."""
        conn = await self._borrowed()
        fit = True
        try:
            yield conn
        except asyncpg.UniqueViolationError as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        except _REFUSED as err:
            # The server refused the statement: the connection is as it was. Anything
            # else (a protocol error, a lost connection) leaves it in a state unknown.
            fit = isinstance(err, asyncpg.PostgresError)
            raise StoreError(f"session store {self.where}: {err}") from err
        except BaseException:
            fit = False
            raise
        finally:
            self._returned(conn, fit)

    async def fetch(self, query: str, args: Any, session_id: str | None = None) -> list[Any]:
        """The rows one statement answers."""
        async with self.connection(session_id) as conn:
            return await rows(conn, query, args)

    async def _borrowed(self) -> asyncpg.Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.is_closed():
                return conn
            self._dropped(conn)  # closed while it waited (a server restarted, a timeout)
        if self._held < self.size:
            self._held += 1
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
                    self._place_freed()
                else:
                    self._returned(handed, True)
            waiter.cancel()
            if isinstance(err, TimeoutError):
                raise StoreError(
                    f"session store {self.where}: no connection free within {WAIT_SECONDS:g} s"
                ) from None
            raise
        # None: a place freed and handed to this caller, to open a connection in.
        return conn if conn is not None else await self._opened()

    async def _opened(self) -> asyncpg.Connection:
        """A new connection, in a place already counted as held."""
        try:
            async with asyncio.timeout(self._connect_seconds):
                conn = await asyncpg.connect(self._dsn)
        except BaseException as err:
            self._place_freed()
            if isinstance(err, TimeoutError):
                raise StoreError(
                    f"cannot reach session store {self.where}: no answer within "
                    f"{self._connect_seconds:g} s"
                ) from None
            if isinstance(err, (*_REFUSED, ValueError)):  # ValueError: a URL it cannot read
                raise StoreError(f"cannot reach session store {self.where}: {err}") from err
            raise
        self.opened += 1
        self._born[conn] = self._generation
        return conn

    def _returned(self, conn: asyncpg.Connection, fit: bool) -> None:
        stale = self._born.get(conn) != self._generation
        if not fit or stale or conn.is_closed() or conn.is_in_transaction():
            conn.terminate()  # no goodbye to a server that may be gone or mid-statement
            self._dropped(conn)
            return
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _dropped(self, conn: asyncpg.Connection) -> None:
        self._born.pop(conn, None)
        self._place_freed()

    def _place_freed(self) -> None:
        """A place given up: to the first caller still waiting (it stays held, and that
        caller opens a connection in it), else back to the pool."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._held -= 1

    async def close(self) -> None:
        """Close the idle connections; those lent out are closed as they come back."""
        self._generation += 1
        idle, self._idle = self._idle, []
        for conn in idle:
            with suppress(Exception):
                await conn.close(timeout=CLOSE_SECONDS)
            conn.terminate()  # if the goodbye did not go through
            self._dropped(conn)


async def rows(conn: asyncpg.Connection, query: str, args: Any) -> list[Any]:
    """The rows `query` (psycopg's placeholders) answers with `args` on `conn`."""
    text, names = numbered(query)
    if isinstance(args, Mapping):
        return await conn.fetch(text, *(args[name] for name in names))  # type: ignore[no-any-return]
    return await conn.fetch(text, *args)  # type: ignore[no-any-return]


def for_asyncpg(url: str) -> tuple[str, float]:
    """`url` as asyncpg reads it, and how long to wait for a connection: libpq's
    `connect_timeout` taken as that bound (else `CONNECT_SECONDS`), the parameters only
    libpq knows left out, `fallback_application_name` as the name when none is given."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    seconds = CONNECT_SECONDS
    given = query.pop("connect_timeout", "")
    with suppress(ValueError):
        if float(given) > 0:
            seconds = float(given)
    fallback = query.pop("fallback_application_name", None)
    if fallback is not None:
        query.setdefault("application_name", fallback)
    kept = {k: v for k, v in query.items() if k not in _LIBPQ_ONLY}
    return urlunsplit(parts._replace(query=urlencode(kept))), seconds


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
