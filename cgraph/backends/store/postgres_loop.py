"""The PostgreSQL store on the server's event loop, and the lease's statements.

A served store (`serve_on`) awaits a turn's statements on the loop, with connections of
the loop's own (`AsyncConnections`): its commits (`acommit`), and its lease taken and let
go (`aacquire`, `arelease`, which `Holding.ahold` calls). A turn waiting on a model then
takes no thread, and its statements no hand-off of the interpreter between the loop and
a worker. Each awaited call builds and reads its statement with the blocking call's own
pieces (`PostgresStore._step`, `ran`, `asking`, `leased`): one statement, two ways to
wait on it.
On any other loop, an awaited call runs the blocking one in a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from cgraph.backends.store.leases import lost
from cgraph.backends.store.packing import unpack
from cgraph.backends.store.postgres_pool import AsyncConnections, rows
from cgraph.backends.store.postgres_steps import NOW, commit_statement
from cgraph.backends.store.rows import missing, standing_row
from cgraph.errors import StoreError
from cgraph.runtime.ports import Delivery, Lease
from cgraph.runtime.state.records import Event

if TYPE_CHECKING:
    from cgraph.backends.store.leases import Holding
    from cgraph.backends.store.postgres_pool import Connections
    from cgraph.backends.store.postgres_steps import Runs

BLOCKING_SIZE = 3
"""Of a served store's connections, those it keeps for its blocking statements."""

STANDING = """
SELECT s.created_at, s.snapshot, k.turn, k.seq FROM cgraph_sessions s
LEFT JOIN cgraph_keys k ON k.sid = s.key AND k.key = %s WHERE s.id = %s
"""
"""Where a session stands and the turn of a key (`standing`): one statement, not a `load`
and a `turn_of_key`."""
ACQUIRE = f"""
INSERT INTO cgraph_leases AS l (id, holder, expires, fence)
VALUES (%(sid)s, %(holder)s, {NOW} + %(ttl)s::float8, 1)
ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
    fence = l.fence + 1
WHERE l.holder IS NULL OR l.expires <= {NOW}
RETURNING fence, expires
"""
"""The lease when it is free or lapsed (a row updated, with the next fence); no row when
another's is in force."""
TAKEN = f"""
WITH taken AS ({ACQUIRE.strip()})
SELECT t.fence, t.expires, s.created_at, s.snapshot, k.turn, k.seq FROM taken t
LEFT JOIN cgraph_sessions s ON s.id = %(sid)s
LEFT JOIN cgraph_keys k ON k.sid = s.key AND k.key = %(key)s
"""
"""`ACQUIRE` and `STANDING` in one statement. Its read is the database as it was when the
statement began, which is where the session stands only when no other holder came
between (`Holding.followed`): one that let go while this statement waited on its lock
may have committed after that."""
RENEW = f"""
UPDATE cgraph_leases l SET expires = {NOW} + %(ttl)s::float8
FROM unnest(%(ids)s::text[], %(fences)s::bigint[]) AS u(id, fence)
WHERE l.id = u.id AND l.fence = u.fence AND l.holder = %(holder)s
RETURNING l.id, l.fence, l.expires
"""
RELEASE = "UPDATE cgraph_leases SET holder = NULL WHERE id = %s AND fence = %s AND holder = %s"


class _Store(Protocol):
    """What the awaited statements use of the store they are mixed into."""

    url: str
    where: str
    pool_size: int
    leases: Holding
    _pool: Connections
    _runs: Runs
    _served: AsyncConnections | None
    commit: Callable[..., None]
    acquire: Callable[..., Lease | None]
    release: Callable[[Lease], None]
    _step: Callable[..., dict[str, Any]]

    def _awaited(self) -> AsyncConnections | None: ...


class Awaited:
    """The awaited statements of `PostgresStore`, mixed in."""

    _served: AsyncConnections | None = None
    """The served loop's connections, once `serve_on` named it."""

    async def acommit(
        self: _Store,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """`commit`, awaited on the served loop (in a thread on any other)."""
        pool = self._awaited()
        if pool is None:
            call = partial(self.commit, session_id, events, snapshot, checkpoint=checkpoint)
            await asyncio.to_thread(call, rewind_to=rewind_to, fence=fence, deliveries=deliveries)
            return
        args = self._step(session_id, events, snapshot, checkpoint, rewind_to, fence, deliveries)
        try:
            row = (await pool.fetch(commit_statement(args), args, session_id))[0]
            ran(session_id, args, row, self.where)
        except BaseException:
            self._runs.forget(session_id)
            raise

    async def aacquire(
        self: _Store, session_id: str, *, ttl: float, key: str | None = None
    ) -> Lease | None:
        """`acquire`, awaited on the served loop (in a thread on any other)."""
        pool = self._awaited()
        if pool is None:
            return await asyncio.to_thread(partial(self.acquire, session_id, ttl=ttl, key=key))
        args, found = asking(session_id, self.leases.holder, ttl, key)
        async with pool.connection(session_id) as conn:
            taken = await rows(conn, TAKEN, {**args, "key": found})
            if taken and not self.leases.followed(session_id, int(taken[0][0])):
                # another holder came between: read again, after (see acquire)
                standing = await rows(conn, STANDING, (found, session_id))
            else:
                standing = [row[2:] for row in taken if row[2] is not None]
        return leased(session_id, self.leases.holder, taken, standing)

    async def arelease(self: _Store, lease: Lease) -> None:
        """`release`, awaited on the served loop (in a thread on any other)."""
        pool = self._awaited()
        if pool is None:
            await asyncio.to_thread(self.release, lease)
            return
        await pool.fetch(RELEASE, (lease.session_id, lease.fence, lease.holder))
        self.leases.released(lease)

    def serve_on(self: _Store, loop: asyncio.AbstractEventLoop) -> None:
        """Await a turn's statements on `loop` from now on (the server's): its commits and
        its lease, in a pool of that loop's; the other statements (reads, creates, loads)
        keep the blocking pool, with a few of this store's connections."""
        blocking = max(1, min(BLOCKING_SIZE, self.pool_size // 3))
        self._served = AsyncConnections(
            self.url, max(1, self.pool_size - blocking), self.where, loop
        )
        self._pool.resize(blocking)

    @property
    def awaits(self: _Store) -> bool:
        """Whether `serve_on` gave this store a loop to await its statements on."""
        return self._served is not None

    async def aclose(self: _Store) -> None:
        """Close the served loop's pool (on that loop, when it stops serving)."""
        if self._served is not None:
            await self._served.close()

    def _awaited(self: _Store) -> AsyncConnections | None:
        """The served loop's pool, when the caller runs on that loop."""
        served = self._served
        if served is None:
            return None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return served if running is served.loop else None


def ran(session_id: str, args: dict[str, Any], row: Sequence[Any], where: str) -> None:
    """What a step's statement answered (`_RESULT`): an error unless the step was written
    under the fence in force."""
    stepped, fenced, new = row
    if not fenced:
        raise lost(session_id, args["fence"])
    if not new:
        raise StoreError(f"an event of `{session_id}` was already committed")
    if not stepped:
        raise missing(session_id, where)


def asking(
    session_id: str, holder: str, ttl: float, key: str | None
) -> tuple[dict[str, Any], str | None]:
    """The arguments of `ACQUIRE`, and of `STANDING`'s key."""
    return {"sid": session_id, "holder": holder, "ttl": ttl}, None if key is None else str(key)


def leased(session_id: str, holder: str, rows: list[Any], standing: list[Any]) -> Lease | None:
    """The lease `ACQUIRE` answered (None: another's is in force), with the standing."""
    if not rows:
        return None
    fence, expires = int(rows[0][0]), float(rows[0][1])
    read = None
    if standing:
        created_at, snapshot, turn, seq = standing[0]
        read = standing_row(created_at, unpack(snapshot), turn, seq)
    return Lease(session_id, holder, fence, expires, read)
