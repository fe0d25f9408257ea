"""Sessions in PostgreSQL (psycopg 3 and psycopg-pool): any number of processes, on any
machines, serve the same sessions.

The tables hold what the SQLite store's do, named `cgraph_*` so they can share a database:
an append-only event log, the latest snapshot per session, a checkpoint per turn and the
idempotency keys in effect. A step is one statement — its events, the snapshot, the
checkpoint and the keys written by one round trip, atomically — so a session is always
exactly at its last committed step, and the bytes stored per turn do not grow with the
session.

The log is kept by the row, not by the event (`cgraph_log`): a step's events are one row
of plain JSON, and the statement of a turn's last step replaces the rows of the turn's
steps by one row of all its events, deflated against cgraph's vocabulary (`packing`).
Every event stays, in order and unchanged: a row is what a turn took, and the step rows
were its crash safety until the turn ended. Only rows this process wrote in one run are
folded (`PostgresStore._steps`, checked against the table in the statement), so a turn
another process began keeps that process's rows as they are. Snapshots are deflated too.
A turn of six steps stores about 1.3 KB instead of 6 KB (docs/data/bench_serve.md).

One writer per session is a lease (`cgraph_leases`: holder, expiry on the database's
clock, a fence that only goes up), taken, renewed and let go in short statements: a turn
waiting on a model holds no connection. Every write locks the session's lease row (`FOR
SHARE`) and goes only when its fence is the one in force, so a lease taken over waits for
a write under way and refuses every later one of the holder it replaced. A holder that
dies stops renewing: its leases lapse after their ttl (seconds).

The layout is versioned (`MIGRATIONS`): opening a store creates or upgrades its tables
under a lock (so two servers starting at once migrate once) and refuses tables written by
a later cgraph. psycopg is imported only here, only for a `postgresql://` store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from cgraph.backends.store.leases import LEASE_SECONDS, Holding, lost
from cgraph.backends.store.outbox import COLUMNS, POSTGRES_TABLE, TABLE, PostgresOutbox, values
from cgraph.backends.store.packing import (
    deflated,
    events_text,
    joined,
    pack,
    unpack,
    unpack_events,
)
from cgraph.backends.store.rows import check_quota, in_effect, info_row, key_of, last_at, place
from cgraph.errors import SessionExists, SessionNotFound, StoreError
from cgraph.runtime.ports import Delivery, Lease, SessionInfo, Standing, StoredSession
from cgraph.runtime.state.records import Event

MIGRATIONS: tuple[str, ...] = (
    # 1: the SQLite store's layout 2 (message places and keys indexed). The other tables
    # name a session by a number of 8 bytes (`key`), not by its id: an event row and its
    # index entry carry it at every event. The session row leaves room on its page
    # (fillfactor) so that replacing its snapshot at every step is a HOT update.
    """
    CREATE TABLE cgraph_sessions (
        key bigint GENERATED ALWAYS AS IDENTITY UNIQUE, id text PRIMARY KEY,
        user_id text NOT NULL, graph text NOT NULL, graph_name text NOT NULL,
        model text NOT NULL, created_at float8 NOT NULL, updated_at float8 NOT NULL,
        turn_seq int NOT NULL, snapshot text NOT NULL
    ) WITH (fillfactor = 50);
    CREATE INDEX cgraph_sessions_user ON cgraph_sessions (user_id);
    CREATE TABLE cgraph_events (
        sid bigint NOT NULL, seq int NOT NULL, turn int NOT NULL, at float8 NOT NULL,
        msg int, kind text NOT NULL, data text NOT NULL, PRIMARY KEY (sid, seq));
    CREATE INDEX cgraph_events_msg ON cgraph_events (sid, msg) WHERE msg IS NOT NULL;
    CREATE TABLE cgraph_checkpoints (
        sid bigint NOT NULL, turn int NOT NULL, snapshot text NOT NULL,
        PRIMARY KEY (sid, turn));
    CREATE TABLE cgraph_keys (
        sid bigint NOT NULL, turn int NOT NULL, seq int NOT NULL, key text NOT NULL,
        PRIMARY KEY (sid, key));
    """,
    # 2: a row per committed step, not per event: its events as one value (`packing`), and
    # snapshots packed too. An event's row and its index entry cost about as much as the
    # event's own JSON, and a turn of six steps wrote 18 of them: this stores a turn in a
    # third of the bytes, and writes and indexes 7 rows instead of 18. A row's `seq` is
    # its last event's (a page `after=N` starts at the first row past N); `msg` to
    # `msg_end` are the places of its messages. The earlier rows are copied as plain JSON
    # (one event a row), which `packing.unpack` reads as well.
    """
    CREATE TABLE cgraph_log (
        sid bigint NOT NULL, seq int NOT NULL, msg int, msg_end int, data bytea NOT NULL,
        PRIMARY KEY (sid, seq));
    CREATE INDEX cgraph_log_msg ON cgraph_log (sid, msg_end) WHERE msg_end IS NOT NULL;
    INSERT INTO cgraph_log (sid, seq, msg, msg_end, data)
        SELECT sid, seq, msg, msg, convert_to(
            json_build_array(json_build_array(seq, turn, kind, at, data::json))::text, 'UTF8')
        FROM cgraph_events;
    DROP TABLE cgraph_events;
    ALTER TABLE cgraph_sessions ALTER COLUMN snapshot TYPE bytea
        USING convert_to(snapshot, 'UTF8');
    ALTER TABLE cgraph_checkpoints ALTER COLUMN snapshot TYPE bytea
        USING convert_to(snapshot, 'UTF8');
    """,
    # 3: a lease per session instead of an advisory lock held on a connection for the turn.
    # A row outlives its session (a fence never goes down, also not for a session deleted
    # and created again) and is updated in place at every renewal (fillfactor: HOT).
    """
    CREATE TABLE cgraph_leases (
        id text PRIMARY KEY, holder text, expires float8 NOT NULL, fence bigint NOT NULL
    ) WITH (fillfactor = 50);
    """,
    # 4: the webhook outbox, written by the statement of a turn's last step (`_OUTBOX`), so
    # a turn's events are kept exactly when the turn is. (An earlier cgraph's dispatcher
    # created the same table on its own connection: IF NOT EXISTS.)
    POSTGRES_TABLE,
)
SCHEMA_VERSION = len(MIGRATIONS)
"""The layout this cgraph writes: the number of migrations."""
MIGRATION_LOCK = 0x63677261  # "cgra": one migration at a time across servers
POOL_SIZE = 10
"""Connections per process: each is lent for one statement (a turn holds none while it waits)."""
CONNECT_SECONDS = 10.0

_NOW = "extract(epoch FROM clock_timestamp())"
"""The database's clock: the one every machine's leases are timed by."""
_FENCED = f"""
WITH ok AS (SELECT CASE WHEN %(fence)s::bigint IS NULL THEN NOT EXISTS (
        SELECT 1 FROM cgraph_leases
        WHERE id = %(sid)s AND holder IS NOT NULL AND expires > {_NOW})
    ELSE EXISTS (
        SELECT 1 FROM cgraph_leases
        WHERE id = %(sid)s AND fence = %(fence)s AND holder IS NOT NULL FOR SHARE)
    END AS ok)"""
"""Whether a write may go: with a fence, when it is the lease in force (its row locked
until the write commits, so a lease is not taken over in the middle of it); without one,
when no lease is in force."""

_NEW = "NOT EXISTS (SELECT 1 FROM cgraph_log l WHERE l.sid = s.key AND l.seq >= %(first)s)"
_EVENTS = f""",
e AS (INSERT INTO cgraph_log (sid, seq, msg, msg_end, data)
    SELECT s.key, %(last)s, %(msg)s, %(msg_end)s, %(data)s FROM s
    WHERE %(data)s::bytea IS NOT NULL AND {_NEW}
    RETURNING 1)"""
"""A step's events as one row, refused (none inserted) when an event at or after its first
is stored already: a second writer's step, or one committed twice."""
_FOLD = f""",
f AS (SELECT count(*) AS n FROM cgraph_log l, s
    WHERE l.sid = s.key AND l.seq >= %(fold_from)s AND l.seq < %(first)s),
d AS (DELETE FROM cgraph_log l USING s, f
    WHERE l.sid = s.key AND l.seq >= %(fold_from)s AND l.seq < %(first)s
        AND f.n = %(folded)s AND {_NEW}),
e AS (INSERT INTO cgraph_log (sid, seq, msg, msg_end, data)
    SELECT s.key, %(last)s,
        CASE WHEN f.n = %(folded)s THEN %(fold_msg)s ELSE %(msg)s END,
        CASE WHEN f.n = %(folded)s THEN %(fold_msg_end)s ELSE %(msg_end)s END,
        CASE WHEN f.n = %(folded)s THEN %(fold_data)s ELSE %(data)s END
    FROM s, f WHERE {_NEW}
    RETURNING 1)"""
"""A turn's last step: its row and the rows of the turn's earlier steps (`folded` rows from
seq `fold_from` on, which this process wrote) replaced by one row of them all, deflated.
When the rows there are not the ones expected (another process wrote some), the step's
row is written alone, as `_EVENTS` does."""
_STEP = (
    _FENCED
    + """,
s AS (
    UPDATE cgraph_sessions SET snapshot = %(snapshot)s, turn_seq = %(turn_seq)s,
        updated_at = greatest(updated_at, %(at)s)
    WHERE id = %(sid)s AND (SELECT ok FROM ok) RETURNING key)"""
)
_REWIND = """,
dc AS (DELETE FROM cgraph_checkpoints USING s WHERE sid = s.key AND turn > %(rewind)s),
dk AS (DELETE FROM cgraph_keys USING s WHERE sid = s.key AND turn > %(rewind)s)"""
_KEYS = """,
k AS (INSERT INTO cgraph_keys (sid, key, turn, seq)
    SELECT s.key, u.* FROM s, unnest(%(keys)s::text[], %(key_turns)s::int[],
        %(key_seqs)s::int[]) AS u
    ON CONFLICT (sid, key) DO UPDATE SET turn = excluded.turn, seq = excluded.seq)"""
_CHECKPOINT = """,
c AS (INSERT INTO cgraph_checkpoints (sid, turn, snapshot)
    SELECT s.key, %(checkpoint)s, %(snapshot)s FROM s
    ON CONFLICT (sid, turn) DO UPDATE SET snapshot = excluded.snapshot)"""
_TYPES = ("text",) * 7 + ("int", "float8", "text", "float8", "float8")
_OUTBOX = f""",
o AS (INSERT INTO {TABLE} SELECT u.* FROM s, unnest(
    {", ".join(f"%(o_{c})s::{t}[]" for c, t in zip(COLUMNS, _TYPES, strict=True))}) AS u
    ON CONFLICT (id) DO NOTHING)"""
"""A turn's deliveries (`Announcer`), in its last step's statement: written only when the
step is (the session found, the fence in force); one already there is kept."""
_RESULT = "\nSELECT (SELECT count(*) FROM s), (SELECT count(*) FROM e), (SELECT ok FROM ok)"
"""(the session found, its events' row written, the fence in force)."""
_COMMITS = {
    (rewind, keys, checkpoint, fold, outbox): _STEP
    + (_FOLD if fold else _EVENTS)
    + (_REWIND if rewind else "")
    + (_KEYS if keys else "")
    + (_CHECKPOINT if checkpoint else "")
    + (_OUTBOX if outbox else "")
    + _RESULT
    for rewind in (False, True)
    for keys in (False, True)
    for checkpoint in (False, True)
    for fold in (False, True)
    for outbox in (False, True)
}
"""One step's statement, by what it writes besides its events and the snapshot (an undo's
rewind, idempotency keys, the turn's checkpoint, the turn's rows folded, its deliveries):
a step writes only what it has, in one round trip, and each is prepared once per
connection."""
_APPEND = {
    keys: _FENCED
    + ",\ns AS (SELECT key FROM cgraph_sessions WHERE id = %(sid)s AND (SELECT ok FROM ok))"
    + _EVENTS
    + (_KEYS if keys else "")
    + _RESULT
    for keys in (False, True)
}
"""Events written ahead of a step, the snapshot unchanged (`append`)."""
_SESSION = "id, user_id, graph, graph_name, model, created_at, updated_at, snapshot"
_LOAD = f"""
SELECT {", ".join("s." + c.strip() for c in _SESSION.split(","))}, s.turn_seq, e.data
FROM cgraph_sessions s
LEFT JOIN cgraph_log e ON e.sid = s.key AND e.seq >= s.turn_seq
WHERE s.id = %s ORDER BY e.seq
"""
_STANDING = """
SELECT s.created_at, s.snapshot, k.turn, k.seq FROM cgraph_sessions s
LEFT JOIN cgraph_keys k ON k.sid = s.key AND k.key = %s WHERE s.id = %s
"""
"""Where a session stands and the turn of a key (`standing`): one statement, not a `load`
and a `turn_of_key`."""
_KEY = "(SELECT key FROM cgraph_sessions WHERE id = %s)"
"""A session's number, from its id."""
_DELETE = (
    _FENCED
    + """,
s AS (DELETE FROM cgraph_sessions WHERE id = %(sid)s AND (SELECT ok FROM ok) RETURNING key),
e AS (DELETE FROM cgraph_log USING s WHERE sid = s.key),
c AS (DELETE FROM cgraph_checkpoints USING s WHERE sid = s.key),
k AS (DELETE FROM cgraph_keys USING s WHERE sid = s.key)
SELECT (SELECT count(*) FROM s), (SELECT ok FROM ok)
"""
)
_ACQUIRE = f"""
INSERT INTO cgraph_leases AS l (id, holder, expires, fence)
VALUES (%(sid)s, %(holder)s, {_NOW} + %(ttl)s, 1)
ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires = excluded.expires,
    fence = l.fence + 1
WHERE l.holder IS NULL OR l.expires <= {_NOW}
RETURNING fence, expires
"""
"""The lease when it is free or lapsed (a row updated, with the next fence); no row when
another's is in force."""
_RENEW = f"""
UPDATE cgraph_leases l SET expires = {_NOW} + %(ttl)s
FROM unnest(%(ids)s::text[], %(fences)s::bigint[]) AS u(id, fence)
WHERE l.id = u.id AND l.fence = u.fence AND l.holder = %(holder)s
RETURNING l.id, l.fence, l.expires
"""
_RELEASE = "UPDATE cgraph_leases SET holder = NULL WHERE id = %s AND fence = %s AND holder = %s"


class PostgresStore:
    """Sessions in a PostgreSQL database, shared by every process that opens the URL.

    `url` is a libpq connection URL (`postgresql://user:password@host:5432/db`; its query
    may set libpq options). `pool_size` caps this process's connections, each lent for one
    statement; `lease` is the seconds a session's lease lasts unrenewed (how long a killed
    holder keeps its sessions from the next).
    """

    shared = True
    """Any process on any machine that reaches the database serves the same sessions."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = POOL_SIZE,
        lease: float = LEASE_SECONDS,
        sessions_per_user: int | None = None,
    ) -> None:
        self.url, self.pool_size = url, pool_size
        self.sessions_per_user = sessions_per_user
        self.where = _where(url)
        self.leases = Holding(self, lease)
        self._open: ConnectionPool | None = None
        self._guard = threading.Lock()
        self._steps: dict[str, list[_Row]] = {}
        """Per session, the rows this process wrote since the turn's last fold, in a run
        (each begins where the one before ended): folded into one at the turn's end."""
        migrate(url)

    # ----- connections --------------------------------------------------------------------

    @property
    def _pool(self) -> ConnectionPool:
        """The pool; a closed store opens it again when it is used."""
        with self._guard:
            if self._open is None:
                pool = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.pool_size,
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
    def _connection(self, session_id: str | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, for one statement or transaction; a database error
        becomes `StoreError`."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except pg_errors.UniqueViolation as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        except psycopg.Error as err:
            raise StoreError(f"session store {self.where}: {err}") from err

    def _fetch(self, query: str, args: Any, session_id: str | None = None) -> list[Any]:
        with self._connection(session_id) as conn:
            return conn.execute(query, args).fetchall()

    # ----- the port -----------------------------------------------------------------------

    def create(
        self,
        info: SessionInfo,
        snapshot: dict[str, Any],
        events: Sequence[Event],
        *,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        text = pack(snapshot)
        row = (info.id, info.user_id, info.graph, info.graph_name, info.model)
        seq = int(snapshot.get("turn_seq", 0))
        given = self.leases.fence(info.id, fence)
        try:
            with self._connection(info.id) as conn, conn.transaction():
                ok = conn.execute(_FENCED + " SELECT ok FROM ok", {"sid": info.id, "fence": given})
                if not ok.fetchone()[0]:  # type: ignore[index]
                    raise lost(info.id, given)
                if self.sessions_per_user is not None:
                    check_quota(_kept(conn, info.user_id), self.sessions_per_user)
                conn.execute(
                    f"INSERT INTO cgraph_sessions ({_SESSION}, turn_seq)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (*row, info.created_at, info.created_at, text, seq),
                )
                args = self._step(info.id, events, text, seq, 0, None) | {"fence": given}
                if deliveries:
                    args |= _outbox(deliveries)
                conn.execute(_commit(args), args)
        except StoreError as err:
            if isinstance(err.__cause__, pg_errors.UniqueViolation):
                raise SessionExists(f"session `{info.id}` already exists") from err
            raise

    def commit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        seq = int(snapshot.get("turn_seq", 0))
        args = self._step(session_id, events, pack(snapshot), seq, checkpoint, rewind_to)
        args["fence"] = self.leases.fence(session_id, fence)
        if deliveries:
            args |= _outbox(deliveries)
        self._run(session_id, _commit(args), args)

    def append(self, session_id: str, events: Sequence[Event], *, fence: int | None = None) -> None:
        args = self._step(session_id, events, b"", 0, None, None)
        args["fence"] = self.leases.fence(session_id, fence)
        self._run(session_id, _APPEND[bool(args["keys"])], args)

    def _run(self, session_id: str, statement: str, args: dict[str, Any]) -> None:
        """Run a step's statement; what it answered: (the session found, its events' row
        written, its fence in force). A step not written ends the run of rows to fold."""
        try:
            session, written, fenced = self._fetch(statement, args, session_id)[0]
            if not fenced:
                raise lost(session_id, args["fence"])
            if not session:
                raise SessionNotFound(f"no session `{session_id}` in {self.where}")
            if args["data"] is not None and not written:
                raise StoreError(f"an event of `{session_id}` was already committed")
        except BaseException:
            self._steps.pop(session_id, None)
            raise

    def _step(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: bytes,
        turn_seq: int,
        checkpoint: int | None,
        rewind_to: int | None,
    ) -> dict[str, Any]:
        """The arguments of one step's statement (`_COMMITS`): a step's row is plain JSON
        until its turn ends (`checkpoint`); then the turn's rows this process wrote are
        folded into one, deflated (`packing`)."""
        try:
            text = events_text(events) if events else None
        except ValueError as err:
            raise StoreError(f"session `{session_id}`: {err}") from err
        args = _arguments(session_id, events, snapshot, turn_seq, checkpoint, rewind_to)
        run = self._steps.pop(session_id, [])
        if text is None:
            args["data"] = None
            if checkpoint is None:  # nothing written: the run goes on
                self._steps[session_id] = run
            return args
        row = _Row(int(events[0].seq), int(events[-1].seq), args["msg"], args["msg_end"], text)
        if run and run[-1].last + 1 != row.first:
            run = []  # another writer's rows in between: not this run
        if checkpoint is None:
            args["data"] = text.encode()
            self._steps[session_id] = [*run, row]
            return args
        args["data"] = deflated(text)
        if run:
            rows = [*run, row]
            places = [p for r in rows for p in (r.msg, r.msg_end) if p is not None]
            args.update(
                fold_from=run[0].first,
                folded=len(run),
                fold_msg=min(places, default=None),
                fold_msg_end=max(places, default=None),
                fold_data=deflated(joined([r.text for r in rows])),
            )
        return args

    def load(self, session_id: str) -> StoredSession:
        self._steps.pop(session_id, None)  # another process may have written since
        rows = self._fetch(_LOAD, (session_id,), session_id)
        if not rows:
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")
        snapshot, since = unpack(rows[0][7]), rows[0][8]
        events = [e for r in rows if r[9] is not None for e in _events(session_id, r[9], since)]
        return StoredSession(info_row(rows[0], snapshot), snapshot, events)

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        # A row holds one step's events, at least one: `limit` rows hold `limit` events.
        rows = self._fetch(
            f"SELECT data FROM cgraph_log WHERE sid = {_KEY} AND seq > %s ORDER BY seq LIMIT %s",
            (session_id, after, limit),
            session_id,
        )
        if not rows:
            self._require(session_id)
        found = [e for r in rows for e in _events(session_id, r[0], after + 1)]
        return found if limit is None else found[:limit]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        rows = self._fetch(
            f"SELECT data FROM cgraph_log WHERE sid = {_KEY} AND msg_end >= %s AND msg < %s"
            " ORDER BY seq",
            (session_id, start, end),
            session_id,
        )
        if not rows:
            self._require(session_id)
        placed = ((place(e), e) for r in rows for e in unpack_events(session_id, r[0]))
        return in_effect(placed, start, end)

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        rows = self._fetch(
            f"SELECT turn, seq FROM cgraph_keys WHERE sid = {_KEY} AND key = %s",
            (session_id, str(key)),
            session_id,
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        found = None if key is None else str(key)
        rows = self._fetch(_STANDING, (found, session_id), session_id)
        if not rows:
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")
        created_at, snapshot, turn, seq = rows[0]
        keyed = None if turn is None else (int(turn), int(seq))
        return Standing(created_at, unpack(snapshot).get("seq"), keyed)

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        rows = self._fetch(
            f"SELECT snapshot FROM cgraph_checkpoints WHERE sid = {_KEY} AND turn = %s",
            (session_id, turn),
            session_id,
        )
        return unpack(rows[0][0]) if rows else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        query = f"SELECT {_SESSION} FROM cgraph_sessions"
        if user_id is not None:
            rows = self._fetch(query + " WHERE user_id = %s ORDER BY updated_at DESC", (user_id,))
        else:
            rows = self._fetch(query + " ORDER BY updated_at DESC", ())
        return [info_row(r, unpack(r[7])) for r in rows]

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        self._steps.pop(session_id, None)
        given = self.leases.fence(session_id, fence)
        deleted, fenced = self._fetch(_DELETE, {"sid": session_id, "fence": given}, session_id)[0]
        if not fenced:
            raise lost(session_id, given)
        return bool(deleted)

    # ----- leases -------------------------------------------------------------------------

    def acquire(self, session_id: str, *, ttl: float) -> Lease | None:
        args = {"sid": session_id, "holder": self.leases.holder, "ttl": ttl}
        rows = self._fetch(_ACQUIRE, args)
        if not rows:
            return None
        return Lease(session_id, self.leases.holder, int(rows[0][0]), float(rows[0][1]))

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        if not leases:
            return []
        args = {
            "ids": [lease.session_id for lease in leases],
            "fences": [lease.fence for lease in leases],
            "holder": self.leases.holder,
            "ttl": ttl,
        }
        rows = self._fetch(_RENEW, args)
        return [Lease(r[0], self.leases.holder, int(r[1]), float(r[2])) for r in rows]

    def release(self, lease: Lease) -> None:
        with self._connection() as conn:
            conn.execute(_RELEASE, (lease.session_id, lease.fence, lease.holder))

    @contextmanager
    def hold(
        self, session_id: str, *, wait: float = 0.0, ttl: float | None = None
    ) -> Iterator[Lease]:
        with self.leases.hold(session_id, wait, ttl) as lease:
            yield lease

    def outbox(self) -> PostgresOutbox:
        """The outbox table of this database (`cgraph.backends.store.outbox`)."""
        return PostgresOutbox(self.url)

    def close(self) -> None:
        """Close the pool (when no lease is held; it opens again when used)."""
        with self._guard:
            if self._open is not None and not self.leases.holding:
                self._open.close()
                self._open = None

    def _require(self, session_id: str) -> None:
        if not self._fetch("SELECT 1 FROM cgraph_sessions WHERE id = %s", (session_id,)):
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")


class _Row(NamedTuple):
    """A row of the log this process wrote: its events' seqs, places and JSON."""

    first: int
    last: int
    msg: int | None
    msg_end: int | None
    text: str


def _arguments(
    session_id: str,
    events: Sequence[Event],
    snapshot: bytes,
    turn_seq: int,
    checkpoint: int | None,
    rewind_to: int | None,
) -> dict[str, Any]:
    """The arguments of one step's statement but its row's data (`PostgresStore._step`)."""
    keyed = [(k, e) for e in events if (k := key_of(e)) is not None]
    places = [at for e in events if (at := place(e)) is not None]
    return {
        "sid": session_id,
        "snapshot": snapshot,
        "turn_seq": turn_seq,
        "at": float(last_at(events, 0.0)),
        "rewind": rewind_to,
        "checkpoint": checkpoint,
        "first": int(events[0].seq) if events else None,
        "last": int(events[-1].seq) if events else None,
        "msg": min(places, default=None),
        "msg_end": max(places, default=None),
        "data": None,
        "fold_from": None,
        "fence": None,
        "keys": [k for k, _ in keyed],
        "key_turns": [int(e.turn) for _, e in keyed],
        "key_seqs": [int(e.seq) for _, e in keyed],
    }


def _commit(args: dict[str, Any]) -> str:
    """The statement that writes a step with these arguments (`_step`)."""
    return _COMMITS[
        (
            args["rewind"] is not None,
            bool(args["keys"]),
            args["checkpoint"] is not None,
            args["fold_from"] is not None,
            "o_id" in args,
        )
    ]


def _outbox(deliveries: Sequence[Delivery]) -> dict[str, Any]:
    """The `_OUTBOX` arguments: a column of `deliveries` per argument."""
    rows = values(deliveries)
    return {f"o_{column}": [row[i] for row in rows] for i, column in enumerate(COLUMNS)}


def migrate(url: str) -> tuple[int, int]:
    """Create or upgrade cgraph's tables at `url`, under a lock that makes concurrent
    servers migrate once: (version before, version now). `StoreError` when the tables are
    of a later cgraph, or the server cannot be reached."""
    where = _where(url)
    try:
        with psycopg.connect(url, connect_timeout=int(CONNECT_SECONDS)) as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                found = conn.execute("SELECT to_regclass('cgraph_schema')").fetchone()
                version = 0
                if found and found[0]:
                    row = conn.execute("SELECT version FROM cgraph_schema").fetchone()
                    version = int(row[0]) if row else 0
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"session store {where} has layout version {version}, newer than "
                        f"this cgraph's {SCHEMA_VERSION}: upgrade cgraph to open it"
                    )
                if version < SCHEMA_VERSION:
                    _upgrade(conn, version)
            return version, SCHEMA_VERSION
    except psycopg.Error as err:
        raise StoreError(f"cannot open session store {where}: {err}") from err


def _upgrade(conn: psycopg.Connection[Any], version: int) -> None:
    if version == 0:
        conn.execute("CREATE TABLE IF NOT EXISTS cgraph_schema (version int NOT NULL)")
        conn.execute("INSERT INTO cgraph_schema VALUES (0)")
    for script in MIGRATIONS[version:]:
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("UPDATE cgraph_schema SET version = %s", (SCHEMA_VERSION,))


def _where(url: str) -> str:
    """The server and database a URL names, without its password (for messages)."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "postgresql://…"
    host, port, name = (
        parts.get("host", "localhost"),
        parts.get("port", "5432"),
        parts.get("dbname"),
    )
    return f"postgresql://{host}:{port}/{name or ''}"


def _events(session_id: str, data: bytes, since: int) -> list[Event]:
    """A row's events from `since` on (a row may begin before a page or a turn does)."""
    return [e for e in unpack_events(session_id, data) if e.seq >= since]


_USER_LOCK = "hashtextextended('cgraph-user:' || %s, 0)"


def _kept(conn: psycopg.Connection[Any], user_id: str) -> int:
    """The user's sessions, counted under a lock on the user that the transaction holds
    until it ends: two creates of one user never both see room for one more."""
    conn.execute(f"SELECT pg_advisory_xact_lock({_USER_LOCK})", (user_id,))
    found = conn.execute(
        "SELECT count(*) FROM cgraph_sessions WHERE user_id = %s", (user_id,)
    ).fetchone()
    return int(found[0]) if found else 0
