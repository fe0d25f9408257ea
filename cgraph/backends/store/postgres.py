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
folded (`postgres_steps.Runs`, checked against the table in the statement), so a turn
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
a later cgraph. psycopg is imported only here (and by `postgres_pool`, its connections),
only for a `postgresql://` store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from cgraph.backends.store.leases import LEASE_SECONDS, Holding, Leased, lost
from cgraph.backends.store.outbox import POSTGRES_TABLE, PostgresOutbox
from cgraph.backends.store.packing import pack, unpack, unpack_events
from cgraph.backends.store.postgres_loop import (
    ACQUIRE,
    RELEASE,
    RENEW,
    STANDING,
    Awaited,
    asking,
    leased,
    ran,
)
from cgraph.backends.store.postgres_pool import CONNECT_SECONDS, Connections
from cgraph.backends.store.postgres_steps import (
    APPEND,
    FENCED,
    Runs,
    commit_statement,
    outbox_arguments,
)
from cgraph.backends.store.rows import (
    check_quota,
    in_effect,
    info_row,
    missing,
    place,
    standing_row,
)
from cgraph.errors import SessionExists, StoreError
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
    # 4: the webhook outbox, written by the statement of a turn's last step
    # (`postgres_steps`), so a turn's events are kept exactly when the turn is. (An earlier
    # cgraph's dispatcher created the same table on its own connection: IF NOT EXISTS.)
    POSTGRES_TABLE,
)
SCHEMA_VERSION = len(MIGRATIONS)
"""The layout this cgraph writes: the number of migrations."""
MIGRATION_LOCK = 0x63677261  # "cgra": one migration at a time across servers
POOL_SIZE = 10
"""Connections per process: each is lent for one statement (a turn holds none while it waits)."""

_SESSION = "id, user_id, graph, graph_name, model, created_at, updated_at, snapshot"
_LOAD = f"""
SELECT {", ".join("s." + c.strip() for c in _SESSION.split(","))}, s.turn_seq, e.data
FROM cgraph_sessions s
LEFT JOIN cgraph_log e ON e.sid = s.key AND e.seq >= s.turn_seq
WHERE s.id = %s ORDER BY e.seq
"""
_KEY = "(SELECT key FROM cgraph_sessions WHERE id = %s)"
"""A session's number, from its id."""
_DELETE = (
    FENCED
    + """,
s AS (DELETE FROM cgraph_sessions WHERE id = %(sid)s AND (SELECT ok FROM ok) RETURNING key),
e AS (DELETE FROM cgraph_log USING s WHERE sid = s.key),
c AS (DELETE FROM cgraph_checkpoints USING s WHERE sid = s.key),
k AS (DELETE FROM cgraph_keys USING s WHERE sid = s.key)
SELECT (SELECT count(*) FROM s), (SELECT ok FROM ok)
"""
)


class PostgresStore(Awaited, Leased):
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
        self._pool = Connections(url, pool_size, self.where)
        self._renewing = Connections(url, 1, self.where)
        """The renewals' own connection: a pool busy with a herd of commits must not keep
        them waiting until the leases lapse."""
        self._runs = Runs()
        """The rows of each session's turn this process wrote, to fold when it ends."""
        migrate(url)

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
            with self._pool.connection(info.id) as conn, conn.transaction():
                ok = conn.execute(FENCED + " SELECT ok FROM ok", {"sid": info.id, "fence": given})
                if not ok.fetchone()[0]:  # type: ignore[index]
                    raise lost(info.id, given)
                if self.sessions_per_user is not None:
                    check_quota(_kept(conn, info.user_id), self.sessions_per_user)
                conn.execute(
                    f"INSERT INTO cgraph_sessions ({_SESSION}, turn_seq)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (*row, info.created_at, info.created_at, text, seq),
                )
                args = self._runs.step(info.id, events, text, seq, 0, None) | {"fence": given}
                if deliveries:
                    args |= outbox_arguments(deliveries)
                conn.execute(commit_statement(args), args)
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
        args = self._step(session_id, events, snapshot, checkpoint, rewind_to, fence, deliveries)
        self._run(session_id, commit_statement(args), args)

    def _step(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        checkpoint: int | None,
        rewind_to: int | None,
        fence: int | None,
        deliveries: Sequence[Delivery],
    ) -> dict[str, Any]:
        """The arguments of a step's statement (`commit_statement`)."""
        seq = int(snapshot.get("turn_seq", 0))
        args = self._runs.step(session_id, events, pack(snapshot), seq, checkpoint, rewind_to)
        args["fence"] = self.leases.fence(session_id, fence)
        if deliveries:
            args |= outbox_arguments(deliveries)
        return args

    def append(self, session_id: str, events: Sequence[Event], *, fence: int | None = None) -> None:
        args = self._runs.step(session_id, events, b"", 0, None, None)
        args["fence"] = self.leases.fence(session_id, fence)
        self._run(session_id, APPEND[bool(args["keys"])], args)

    def _run(self, session_id: str, statement: str, args: dict[str, Any]) -> None:
        """Run a step's statement. A step not written ends the run of rows to fold."""
        try:
            ran(session_id, args, self._pool.fetch(statement, args, session_id)[0], self.where)
        except BaseException:
            self._runs.forget(session_id)
            raise

    def load(self, session_id: str) -> StoredSession:
        self._runs.forget(session_id)  # another process may have written since
        rows = self._pool.fetch(_LOAD, (session_id,), session_id)
        if not rows:
            raise missing(session_id, self.where)
        snapshot, since = unpack(rows[0][7]), rows[0][8]
        events = [e for r in rows if r[9] is not None for e in _events(session_id, r[9], since)]
        return StoredSession(info_row(rows[0], snapshot), snapshot, events)

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        # A row holds one step's events, at least one: `limit` rows hold `limit` events.
        rows = self._pool.fetch(
            f"SELECT data FROM cgraph_log WHERE sid = {_KEY} AND seq > %s ORDER BY seq LIMIT %s",
            (session_id, after, limit),
            session_id,
        )
        if not rows:
            self._require(session_id)
        found = [e for r in rows for e in _events(session_id, r[0], after + 1)]
        return found if limit is None else found[:limit]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        rows = self._pool.fetch(
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
        rows = self._pool.fetch(
            f"SELECT turn, seq FROM cgraph_keys WHERE sid = {_KEY} AND key = %s",
            (session_id, str(key)),
            session_id,
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        found = None if key is None else str(key)
        rows = self._pool.fetch(STANDING, (found, session_id), session_id)
        if not rows:
            raise missing(session_id, self.where)
        created_at, snapshot, turn, seq = rows[0]
        return standing_row(created_at, unpack(snapshot), turn, seq)

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        rows = self._pool.fetch(
            f"SELECT snapshot FROM cgraph_checkpoints WHERE sid = {_KEY} AND turn = %s",
            (session_id, turn),
            session_id,
        )
        return unpack(rows[0][0]) if rows else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        query = f"SELECT {_SESSION} FROM cgraph_sessions"
        if user_id is not None:
            rows = self._pool.fetch(
                query + " WHERE user_id = %s ORDER BY updated_at DESC", (user_id,)
            )
        else:
            rows = self._pool.fetch(query + " ORDER BY updated_at DESC", ())
        return [info_row(r, unpack(r[7])) for r in rows]

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        self._runs.forget(session_id)
        given = self.leases.fence(session_id, fence)
        deleted, fenced = self._pool.fetch(
            _DELETE, {"sid": session_id, "fence": given}, session_id
        )[0]
        if not fenced:
            raise lost(session_id, given)
        return bool(deleted)

    # ----- leases (`hold` is every store's, `Leased`) -------------------------------------

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None:
        args, found = asking(session_id, self.leases.holder, ttl, key)
        # The standing is read by a second statement in the same round trip: it sees what
        # a lapsed holder committed while the first waited on its lock (one statement
        # reads the database as it was when it began).
        with self._pool.connection(session_id) as conn, conn.pipeline():
            taken = conn.execute(ACQUIRE, args)
            stood = conn.execute(STANDING, (found, session_id))
            rows, standing = taken.fetchall(), stood.fetchall()
        return leased(session_id, self.leases.holder, rows, standing)

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        if not leases:
            return []
        args = {
            "ids": [lease.session_id for lease in leases],
            "fences": [lease.fence for lease in leases],
            "holder": self.leases.holder,
            "ttl": ttl,
        }
        rows = self._renewing.fetch(RENEW, args)
        return [Lease(r[0], self.leases.holder, int(r[1]), float(r[2])) for r in rows]

    def release(self, lease: Lease) -> None:
        with self._pool.connection() as conn:
            conn.execute(RELEASE, (lease.session_id, lease.fence, lease.holder))
        self.leases.released(lease)

    def outbox(self) -> PostgresOutbox:
        """The outbox table of this database (`cgraph.backends.store.outbox`)."""
        return PostgresOutbox(self.url)

    def close(self) -> None:
        """Close the pool (when no lease is held; it opens again when used)."""
        if not self.leases.holding:
            self._pool.close()
            self._renewing.close()

    def _require(self, session_id: str) -> None:
        if not self._pool.fetch("SELECT 1 FROM cgraph_sessions WHERE id = %s", (session_id,)):
            raise missing(session_id, self.where)


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
