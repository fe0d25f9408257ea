"""Sessions in PostgreSQL (psycopg 3 and psycopg-pool): any number of processes, on any
machines, serve the same sessions.

The tables are the SQLite store's, named `cgraph_*` so they can share a database: an
append-only event log (each message event with its place in the transcript, indexed), the
latest snapshot per session, a checkpoint per turn and the idempotency keys in effect. A
step is one statement — its events, the snapshot, the checkpoint and the keys written by
one round trip, atomically — so a session is always exactly at its last committed step,
and the bytes stored per turn do not grow with the session.

`hold` is a session-level advisory lock on a connection of its own, held for the turn:
two turns of one session never interleave, whichever process or machine runs them, and a
holder that dies (its connection gone) lets go at once. The holding thread's reads and
commits of that session go through that same connection.

The layout is versioned (`MIGRATIONS`): opening a store creates or upgrades its tables
under a lock (so two servers starting at once migrate once) and refuses tables written by
a later cgraph. psycopg is imported only here, only for a `postgresql://` store.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from cgraph.backends.store.locks import busy
from cgraph.backends.store.rows import dumps, in_effect, key_of, last_at, place, summary_row
from cgraph.errors import SessionExists, SessionNotFound, StoreError
from cgraph.runtime.ports import SessionInfo, StoredSession
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
)
SCHEMA_VERSION = len(MIGRATIONS)
"""The layout this cgraph writes: the number of migrations."""
MIGRATION_LOCK = 0x63677261  # "cgra": one migration at a time across servers
POOL_SIZE = 20
CONNECT_SECONDS = 10.0

_EVENTS = """,
e AS (INSERT INTO cgraph_events (sid, seq, turn, kind, at, data, msg)
    SELECT s.key, u.* FROM s, unnest(%(seqs)s::int[], %(turns)s::int[], %(kinds)s::text[],
        %(ats)s::float8[], %(datas)s::text[], %(msgs)s::int[]) AS u)"""
_STEP = (
    """
WITH s AS (
    UPDATE cgraph_sessions SET snapshot = %(snapshot)s, turn_seq = %(turn_seq)s,
        updated_at = greatest(updated_at, %(at)s)
    WHERE id = %(sid)s RETURNING key)"""
    + _EVENTS
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
_COMMITS = {
    (rewind, keys, checkpoint): _STEP
    + (_REWIND if rewind else "")
    + (_KEYS if keys else "")
    + (_CHECKPOINT if checkpoint else "")
    + "\nSELECT count(*) FROM s"
    for rewind in (False, True)
    for keys in (False, True)
    for checkpoint in (False, True)
}
"""One step's statement, by what it writes besides its events and the snapshot (an undo's
rewind, idempotency keys, the turn's checkpoint): a step writes only what it has, in one
round trip, and each of the eight is prepared once per connection."""
_APPEND = {
    keys: "\nWITH s AS (SELECT key FROM cgraph_sessions WHERE id = %(sid)s)"
    + _EVENTS
    + (_KEYS if keys else "")
    + "\nSELECT count(*) FROM s"
    for keys in (False, True)
}
"""Events written ahead of a step, the snapshot unchanged (`append`)."""
_SESSION = "id, user_id, graph, graph_name, model, created_at, updated_at, snapshot"
_LOAD = f"""
SELECT {", ".join("s." + c.strip() for c in _SESSION.split(","))},
    e.seq, e.turn, e.kind, e.at, e.data
FROM cgraph_sessions s
LEFT JOIN cgraph_events e ON e.sid = s.key AND e.seq >= s.turn_seq
WHERE s.id = %s ORDER BY e.seq
"""
_KEY = "(SELECT key FROM cgraph_sessions WHERE id = %s)"
"""A session's number, from its id."""
_DELETE = """
WITH s AS (DELETE FROM cgraph_sessions WHERE id = %s RETURNING key),
e AS (DELETE FROM cgraph_events USING s WHERE sid = s.key),
c AS (DELETE FROM cgraph_checkpoints USING s WHERE sid = s.key),
k AS (DELETE FROM cgraph_keys USING s WHERE sid = s.key)
SELECT count(*) FROM s
"""
_LOCK = "hashtextextended('cgraph:' || %s, 0)"


class PostgresStore:
    """Sessions in a PostgreSQL database, shared by every process that opens the URL.

    `url` is a libpq connection URL (`postgresql://user:password@host:5432/db`; its query
    may set libpq options, e.g. `?keepalives_idle=10` so that a dead machine's lock is let
    go within seconds). `pool_size` caps this process's connections: every `hold` keeps one
    for its turn, and other reads borrow one for a statement.
    """

    shared = True
    """Any process on any machine that reaches the database serves the same sessions."""

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        self.url, self.pool_size = url, pool_size
        self.where = _where(url)
        self._open: ConnectionPool | None = None
        self._guard = threading.Lock()
        self._held: dict[str, tuple[psycopg.Connection[Any], int]] = {}
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
        """The connection holding `session_id` when this thread holds it, else a pooled
        one; a database error becomes `StoreError`."""
        held = self._held.get(session_id or "")
        try:
            if held is not None and held[1] == threading.get_ident():
                yield held[0]
                return
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

    def create(self, info: SessionInfo, snapshot: dict[str, Any], events: Sequence[Event]) -> None:
        text = dumps(snapshot)
        row = (info.id, info.user_id, info.graph, info.graph_name, info.model)
        seq = int(snapshot.get("turn_seq", 0))
        try:
            with self._connection(info.id) as conn, conn.transaction():
                conn.execute(
                    f"INSERT INTO cgraph_sessions ({_SESSION}, turn_seq)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (*row, info.created_at, info.created_at, text, seq),
                )
                conn.execute(_commit(args := _step(info.id, events, text, seq, 0, None)), args)
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
    ) -> None:
        seq = int(snapshot.get("turn_seq", 0))
        args = _step(session_id, events, dumps(snapshot), seq, checkpoint, rewind_to)
        if not self._fetch(_commit(args), args, session_id)[0][0]:
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")

    def append(self, session_id: str, events: Sequence[Event]) -> None:
        args = _step(session_id, events, "", 0, None, None)
        if not self._fetch(_APPEND[bool(args["keys"])], args, session_id)[0][0]:
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")

    def load(self, session_id: str) -> StoredSession:
        rows = self._fetch(_LOAD, (session_id,), session_id)
        if not rows:
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")
        snapshot = json.loads(rows[0][7])
        events = [_event(session_id, r[8:]) for r in rows if r[8] is not None]
        return StoredSession(_info(rows[0], snapshot), snapshot, events)

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        rows = self._fetch(
            "SELECT seq, turn, kind, at, data FROM cgraph_events"
            f" WHERE sid = {_KEY} AND seq > %s ORDER BY seq LIMIT %s",
            (session_id, after, limit),
            session_id,
        )
        if not rows:
            self._require(session_id)
        return [_event(session_id, r) for r in rows]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        rows = self._fetch(
            "SELECT seq, turn, kind, at, data, msg FROM cgraph_events"
            f" WHERE sid = {_KEY} AND msg >= %s AND msg < %s ORDER BY seq",
            (session_id, start, end),
            session_id,
        )
        if not rows:
            self._require(session_id)
        return in_effect(((r[5], _event(session_id, r[:5])) for r in rows), start, end)

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        rows = self._fetch(
            f"SELECT turn, seq FROM cgraph_keys WHERE sid = {_KEY} AND key = %s",
            (session_id, str(key)),
            session_id,
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        rows = self._fetch(
            f"SELECT snapshot FROM cgraph_checkpoints WHERE sid = {_KEY} AND turn = %s",
            (session_id, turn),
            session_id,
        )
        return json.loads(rows[0][0]) if rows else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        query = f"SELECT {_SESSION} FROM cgraph_sessions"
        if user_id is not None:
            rows = self._fetch(query + " WHERE user_id = %s ORDER BY updated_at DESC", (user_id,))
        else:
            rows = self._fetch(query + " ORDER BY updated_at DESC", ())
        return [_info(r, json.loads(r[7])) for r in rows]

    def delete(self, session_id: str) -> bool:
        return bool(self._fetch(_DELETE, (session_id,), session_id)[0][0])

    @contextmanager
    def hold(self, session_id: str, *, wait: float = 0.0) -> Iterator[None]:
        try:
            with self._pool.connection() as conn:
                _lock(conn, session_id, wait)
                self._held[session_id] = (conn, threading.get_ident())
                try:
                    yield
                finally:
                    del self._held[session_id]
                    _unlock(conn, session_id)
        except psycopg.Error as err:
            raise StoreError(f"session store {self.where}: {err}") from err

    def close(self) -> None:
        """Close the pool (when no session is held; it opens again when used)."""
        with self._guard:
            if self._open is not None and not self._held:
                self._open.close()
                self._open = None

    def _require(self, session_id: str) -> None:
        if not self._fetch("SELECT 1 FROM cgraph_sessions WHERE id = %s", (session_id,)):
            raise SessionNotFound(f"no session `{session_id}` in {self.where}")


def _lock(conn: psycopg.Connection[Any], session_id: str, wait: float) -> None:
    """Take the session's advisory lock on `conn`, waiting up to `wait` seconds."""
    if wait <= 0:
        taken = conn.execute(f"SELECT pg_try_advisory_lock({_LOCK})", (session_id,)).fetchone()
        if not (taken and taken[0]):
            raise busy(session_id)
        return
    try:  # lock_timeout, local to this one statement, bounds the lock's wait
        conn.execute(
            f"SELECT set_config('lock_timeout', %s, true), pg_advisory_lock({_LOCK})",
            (f"{max(1, round(wait * 1000))}ms", session_id),
        )
    except pg_errors.LockNotAvailable:
        raise busy(session_id) from None


def _unlock(conn: psycopg.Connection[Any], session_id: str) -> None:
    """Let the lock go; a connection that cannot is closed (the server then lets go of
    it) so that the pool never lends a connection still holding a session."""
    try:
        conn.execute(f"SELECT pg_advisory_unlock({_LOCK})", (session_id,))
    except psycopg.Error:
        conn.close()


def _step(
    session_id: str,
    events: Sequence[Event],
    snapshot: str,
    turn_seq: int,
    checkpoint: int | None,
    rewind_to: int | None,
) -> dict[str, Any]:
    """The arguments of one step's statement (`_COMMITS`)."""
    keyed = [(k, e) for e in events if (k := key_of(e)) is not None]
    return {
        "sid": session_id,
        "snapshot": snapshot,
        "turn_seq": turn_seq,
        "at": float(last_at(events, 0.0)),
        "rewind": rewind_to,
        "checkpoint": checkpoint,
        "seqs": [int(e.seq) for e in events],
        "turns": [int(e.turn) for e in events],
        "kinds": [str(e.kind) for e in events],
        "ats": [float(e.at) for e in events],
        "datas": [dumps(e.data) for e in events],
        "msgs": [place(e) for e in events],
        "keys": [k for k, _ in keyed],
        "key_turns": [int(e.turn) for _, e in keyed],
        "key_seqs": [int(e.seq) for _, e in keyed],
    }


def _commit(args: dict[str, Any]) -> str:
    """The statement that writes a step with these arguments (`_step`)."""
    return _COMMITS[
        (args["rewind"] is not None, bool(args["keys"]), args["checkpoint"] is not None)
    ]


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


def _event(session_id: str, row: Sequence[Any]) -> Event:
    seq, turn, kind, at, data = row
    return Event.model_construct(
        seq=seq, session=session_id, turn=turn, kind=kind, at=at, data=json.loads(data)
    )


def _info(row: Sequence[Any], snapshot: dict[str, Any]) -> SessionInfo:
    base = SessionInfo(
        id=row[0],
        user_id=row[1],
        graph=row[2],
        graph_name=row[3],
        model=row[4],
        created_at=row[5],
        updated_at=row[6],
    )
    return summary_row(base, snapshot, row[6])
