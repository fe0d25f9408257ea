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

`hold` is a session-level advisory lock on a connection of its own, held for the turn:
two turns of one session never interleave, whichever process or machine runs them, and a
holder that dies (its connection gone) lets go at once. The holding thread's reads and
commits of that session go through that same connection.

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

from cgraph.backends.store.locks import busy
from cgraph.backends.store.packing import (
    deflated,
    events_text,
    joined,
    pack,
    unpack,
    unpack_events,
)
from cgraph.backends.store.rows import in_effect, info_row, key_of, last_at, place
from cgraph.errors import SessionExists, SessionNotFound, StoreError
from cgraph.runtime.ports import SessionInfo, Standing, StoredSession
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
)
SCHEMA_VERSION = len(MIGRATIONS)
"""The layout this cgraph writes: the number of migrations."""
MIGRATION_LOCK = 0x63677261  # "cgra": one migration at a time across servers
POOL_SIZE = 20
CONNECT_SECONDS = 10.0

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
_STEP = """
WITH s AS (
    UPDATE cgraph_sessions SET snapshot = %(snapshot)s, turn_seq = %(turn_seq)s,
        updated_at = greatest(updated_at, %(at)s)
    WHERE id = %(sid)s RETURNING key)"""
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
_RESULT = "\nSELECT (SELECT count(*) FROM s), (SELECT count(*) FROM e)"
"""(the session found, its events' row written)."""
_COMMITS = {
    (rewind, keys, checkpoint, fold): _STEP
    + (_FOLD if fold else _EVENTS)
    + (_REWIND if rewind else "")
    + (_KEYS if keys else "")
    + (_CHECKPOINT if checkpoint else "")
    + _RESULT
    for rewind in (False, True)
    for keys in (False, True)
    for checkpoint in (False, True)
    for fold in (False, True)
}
"""One step's statement, by what it writes besides its events and the snapshot (an undo's
rewind, idempotency keys, the turn's checkpoint, the turn's rows folded): a step writes
only what it has, in one round trip, and each is prepared once per connection."""
_APPEND = {
    keys: "\nWITH s AS (SELECT key FROM cgraph_sessions WHERE id = %(sid)s)"
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
_DELETE = """
WITH s AS (DELETE FROM cgraph_sessions WHERE id = %s RETURNING key),
e AS (DELETE FROM cgraph_log USING s WHERE sid = s.key),
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
        text = pack(snapshot)
        row = (info.id, info.user_id, info.graph, info.graph_name, info.model)
        seq = int(snapshot.get("turn_seq", 0))
        try:
            with self._connection(info.id) as conn, conn.transaction():
                conn.execute(
                    f"INSERT INTO cgraph_sessions ({_SESSION}, turn_seq)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    (*row, info.created_at, info.created_at, text, seq),
                )
                args = self._step(info.id, events, text, seq, 0, None)
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
    ) -> None:
        seq = int(snapshot.get("turn_seq", 0))
        args = self._step(session_id, events, pack(snapshot), seq, checkpoint, rewind_to)
        self._run(session_id, _commit(args), args)

    def append(self, session_id: str, events: Sequence[Event]) -> None:
        args = self._step(session_id, events, b"", 0, None, None)
        self._run(session_id, _APPEND[bool(args["keys"])], args)

    def _run(self, session_id: str, statement: str, args: dict[str, Any]) -> None:
        """Run a step's statement; what it answered: (the session found, its events' row
        written). A step not written ends the run of rows to fold."""
        try:
            session, written = self._fetch(statement, args, session_id)[0]
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

    def delete(self, session_id: str) -> bool:
        self._steps.pop(session_id, None)
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
        # Through the held connection when this thread holds the session: a second one,
        # borrowed while holding the first, deadlocks a pool whose every holder does so.
        if not self._fetch(
            "SELECT 1 FROM cgraph_sessions WHERE id = %s", (session_id,), session_id
        ):
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
        )
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


def _events(session_id: str, data: bytes, since: int) -> list[Event]:
    """A row's events from `since` on (a row may begin before a page or a turn does)."""
    return [e for e in unpack_events(session_id, data) if e.seq >= since]
