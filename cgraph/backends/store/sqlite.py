"""Where sessions are checkpointed: an append-only event log plus the current snapshot.

`SessionStore` is deliberately small so a server database can back it later. Every step
of a turn is one `commit`: its events are appended and the snapshot replaced in a single
transaction, so after a crash a session is exactly at its last committed step. The
snapshot at the end of each turn is also kept as a checkpoint, which is what `undo`
restores. The transcript is never copied into snapshots — the events hold it — so the
bytes written per step stay small and the file grows linearly with the conversation.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from cgraph.backends.store.leases import LEASE_SECONDS, Holding, alive, lost
from cgraph.backends.store.outbox import SQLITE_INSERT, SQLITE_TABLE, SQLiteOutbox, values
from cgraph.backends.store.rows import (
    SCHEMA_VERSION,
    check_quota,
    dumps,
    in_effect,
    info_row,
    key_of,
    last_at,
    place,
    replayed,
)
from cgraph.errors import SessionExists, SessionNotFound, StoreError
from cgraph.runtime.ports import Delivery, Lease, SessionInfo, Standing, StoredSession
from cgraph.runtime.state.records import Event

Synchronous = Literal["OFF", "NORMAL", "FULL"]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, graph TEXT NOT NULL, graph_name TEXT NOT NULL,
    model TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    snapshot TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_user ON sessions(user_id);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT NULL, kind TEXT NOT NULL,
    at REAL NOT NULL, data TEXT NOT NULL, msg INTEGER,
    PRIMARY KEY (session, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    session TEXT NOT NULL, turn INTEGER NOT NULL, snapshot TEXT NOT NULL,
    PRIMARY KEY (session, turn)) WITHOUT ROWID;
"""
# Version 2: a message event's place in the transcript, and the keys of the turns in effect,
# so a session reads the window of its conversation and finds a key without its whole log.
_INDEXES = """
CREATE INDEX IF NOT EXISTS events_msg ON events(session, msg) WHERE msg IS NOT NULL;
CREATE TABLE IF NOT EXISTS keys (
    session TEXT NOT NULL, key TEXT NOT NULL, turn INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (session, key)) WITHOUT ROWID;
"""
# Version 3: a lease per session (`SessionStore.acquire`), kept when the session is deleted
# so that its fence never goes down.
_LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    session TEXT PRIMARY KEY, holder TEXT, expires REAL NOT NULL, fence INTEGER NOT NULL)
    WITHOUT ROWID;
"""
# Version 4: the webhook outbox (`cgraph.backends.store.outbox.SQLITE_TABLE`), in this file
# so that a turn's deliveries are committed in the turn's own transaction.


class SQLiteStore:
    """Sessions in one SQLite file (stdlib `sqlite3`, WAL journal).

    `synchronous="NORMAL"` (the default) makes every commit survive the process being
    killed at any instant — the WAL is written before `commit` returns — and skips the
    fsync per commit; only a power cut or OS crash can lose the last few steps. Use
    `"FULL"` to fsync every step when that matters more than speed.

    A session's writer holds its lease (`hold`), a row of `leases` that every process on
    the machine sees; the lease of a holder that died (its process gone) is free at once,
    not only when it expires.
    """

    shared = False
    """Processes on one machine share the file; other machines never reach it."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "NORMAL",
        lease: float = LEASE_SECONDS,
        sessions_per_user: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.sessions_per_user = sessions_per_user
        self.leases = Holding(self, lease)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(
                f"cannot create the session store folder {self.path.parent}: {err.strerror or err}"
            ) from err
        self._synchronous = synchronous
        self._open: sqlite3.Connection | None = None
        try:
            with self._transaction() as db:
                _migrate(db, self.path)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open session store {self.path}: {err}") from err

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection; a closed store opens it again when it is used (a session's
        history can still be read after the session closed)."""
        if self._open is None:
            try:
                db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"PRAGMA synchronous={self._synchronous}")
            except sqlite3.Error as err:
                raise StoreError(f"cannot open session store {self.path}: {err}") from err
            self._open = db
        return self._open

    def create(
        self,
        info: SessionInfo,
        snapshot: dict[str, Any],
        events: Sequence[Event],
        *,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        text = dumps(snapshot)
        row = (info.id, info.user_id, info.graph, info.graph_name, info.model)
        with self._transaction() as db:  # BEGIN IMMEDIATE: the count and the insert as one
            self._fenced(db, info.id, fence)
            if self.sessions_per_user is not None:
                (kept,) = db.execute(
                    "SELECT count(*) FROM sessions WHERE user_id=?", (info.user_id,)
                ).fetchone()
                check_quota(kept, self.sessions_per_user)
            try:
                db.execute(
                    "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?)",
                    (*row, info.created_at, info.created_at, text),
                )
            except sqlite3.IntegrityError as err:
                raise SessionExists(f"session `{info.id}` already exists") from err
            self._append(db, info.id, events)
            db.execute("INSERT INTO checkpoints VALUES (?,?,?)", (info.id, 0, text))
            if deliveries:
                db.executemany(SQLITE_INSERT, values(deliveries))

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
        text = dumps(snapshot)
        with self._transaction() as db:
            self._fenced(db, session_id, fence)
            at = last_at(events, 0.0)
            changed = db.execute(
                "UPDATE sessions SET snapshot=?, updated_at=max(updated_at, ?) WHERE id=?",
                (text, at, session_id),
            ).rowcount
            if not changed:
                raise SessionNotFound(f"no session `{session_id}` in {self.path}")
            if rewind_to is not None:
                for table in ("checkpoints", "keys"):
                    db.execute(
                        f"DELETE FROM {table} WHERE session=? AND turn>?", (session_id, rewind_to)
                    )
            self._append(db, session_id, events)
            if checkpoint is not None:
                db.execute(
                    "INSERT OR REPLACE INTO checkpoints VALUES (?,?,?)",
                    (session_id, checkpoint, text),
                )
            if deliveries:
                db.executemany(SQLITE_INSERT, values(deliveries))

    def append(self, session_id: str, events: Sequence[Event], *, fence: int | None = None) -> None:
        with self._transaction() as db:
            self._require(session_id)
            self._fenced(db, session_id, fence)
            self._append(db, session_id, events)

    def load(self, session_id: str) -> StoredSession:
        with self._lock:
            row = self._db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(f"no session `{session_id}` in {self.path}")
            snapshot = json.loads(row[7])
            rows = self._db.execute(
                f"{_EVENTS} WHERE session=? AND seq>=? ORDER BY seq",
                (session_id, int(snapshot.get("turn_seq", 0))),
            ).fetchall()
        events = [_event(session_id, r) for r in rows]
        return StoredSession(info_row(row, snapshot), snapshot, events)

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        with self._lock:
            self._require(session_id)
            rows = self._db.execute(
                f"{_EVENTS} WHERE session=? AND seq>? ORDER BY seq LIMIT ?",
                (session_id, after, -1 if limit is None else limit),
            ).fetchall()
        return [_event(session_id, r) for r in rows]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        with self._lock:
            self._require(session_id)
            # Sorted here: with `ORDER BY seq` SQLite walks the session's whole log by its
            # primary key instead of the places' index (a resume then grew with the session).
            rows = self._db.execute(
                "SELECT seq, turn, kind, at, data, msg FROM events"
                " WHERE session=? AND msg>=? AND msg<?",
                (session_id, start, end),
            ).fetchall()
            rows.sort(key=lambda row: int(row[0]))
        return in_effect(((r[5], _event(session_id, r[:5])) for r in rows), start, end)

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT turn, seq FROM keys WHERE session=? AND key=?", (session_id, str(key))
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        with self._lock:
            row = self._db.execute(
                "SELECT s.created_at, s.snapshot, k.turn, k.seq FROM sessions s"
                " LEFT JOIN keys k ON k.session = s.id AND k.key = ? WHERE s.id = ?",
                (None if key is None else str(key), session_id),
            ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session `{session_id}` in {self.path}")
        keyed = None if row[2] is None else (int(row[2]), int(row[3]))
        return Standing(row[0], json.loads(row[1]).get("seq"), keyed)

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        with self._transaction() as db:
            self._fenced(db, session_id, fence)
            for table in ("events", "checkpoints", "keys"):
                db.execute(f"DELETE FROM {table} WHERE session=?", (session_id,))
            return bool(db.execute("DELETE FROM sessions WHERE id=?", (session_id,)).rowcount)

    def _require(self, session_id: str) -> None:
        found = self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
        if found is None:
            raise SessionNotFound(f"no session `{session_id}` in {self.path}")

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT snapshot FROM checkpoints WHERE session=? AND turn=?", (session_id, turn)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        query = "SELECT * FROM sessions"
        args: tuple[str, ...] = ()
        if user_id is not None:
            query, args = query + " WHERE user_id=?", (user_id,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY updated_at DESC", args).fetchall()
        return [info_row(r, json.loads(r[7])) for r in rows]

    # ----- leases ---------------------------------------------------------------------------

    def acquire(self, session_id: str, *, ttl: float) -> Lease | None:
        with self._transaction() as db:
            row = db.execute(_LEASE, (session_id,)).fetchone()
            if row is not None and _in_force(row):
                return None
            now = time.time()
            lease = Lease(session_id, self.leases.holder, (row[2] if row else 0) + 1, now + ttl)
            db.execute(
                "INSERT OR REPLACE INTO leases VALUES (?,?,?,?)",
                (session_id, lease.holder, lease.expires, lease.fence),
            )
            return lease

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        expires = time.time() + ttl
        renewed = []
        with self._transaction() as db:
            for lease in leases:
                if db.execute(
                    "UPDATE leases SET expires=? WHERE session=? AND holder=? AND fence=?",
                    (expires, lease.session_id, lease.holder, lease.fence),
                ).rowcount:
                    renewed.append(Lease(lease.session_id, lease.holder, lease.fence, expires))
        return renewed

    def release(self, lease: Lease) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE leases SET holder=NULL WHERE session=? AND holder=? AND fence=?",
                (lease.session_id, lease.holder, lease.fence),
            )

    @contextmanager
    def hold(
        self, session_id: str, *, wait: float = 0.0, ttl: float | None = None
    ) -> Iterator[Lease]:
        with self.leases.hold(session_id, wait, ttl) as lease:
            yield lease

    def _fenced(self, db: sqlite3.Connection, session_id: str, fence: int | None) -> None:
        """`LeaseLost` unless a write with `fence` (by default the held lease's) may go."""
        given = self.leases.fence(session_id, fence)
        row = db.execute(_LEASE, (session_id,)).fetchone()
        if given is None:
            ok = row is None or not _in_force(row)
        else:
            ok = row is not None and row[0] is not None and row[2] == given
        if not ok:
            raise lost(session_id, given)

    def outbox(self) -> SQLiteOutbox:
        """The outbox table of this file (`cgraph.backends.store.outbox`)."""
        return SQLiteOutbox(self.path)

    def close(self) -> None:
        with self._lock:
            if self._open is not None:
                self._open.close()
                self._open = None

    def _append(self, db: sqlite3.Connection, session_id: str, events: Sequence[Event]) -> None:
        try:
            db.executemany(
                "INSERT INTO events VALUES (?,?,?,?,?,?,?)",
                [
                    (session_id, e.seq, e.turn, e.kind, e.at, dumps(e.data), place(e))
                    for e in events
                ],
            )
        except sqlite3.IntegrityError as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err
        keyed = [(session_id, k, e.turn, e.seq) for e in events if (k := key_of(e)) is not None]
        if keyed:
            db.executemany("INSERT OR REPLACE INTO keys VALUES (?,?,?,?)", keyed)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db, self._lock, self.path)


class _Transaction:
    """`BEGIN IMMEDIATE` … `COMMIT`, rolled back on any error, under the store's lock."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, path: Path) -> None:
        self.db, self.lock, self.path = db, lock, path

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            self.lock.release()
            raise StoreError(f"cannot write to {self.path}: {err}") from err
        return self.db

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                self.db.execute("COMMIT")
            else:
                self.db.execute("ROLLBACK")
        except sqlite3.Error as err:
            raise StoreError(f"cannot write to {self.path}: {err}") from err
        finally:
            self.lock.release()


_EVENTS = "SELECT seq, turn, kind, at, data FROM events"
_LEASE = "SELECT holder, expires, fence FROM leases WHERE session=?"


def _in_force(row: tuple[Any, ...]) -> bool:
    """A lease row another may not take: held, unexpired, by a holder not known dead."""
    holder, expires, _ = row
    return holder is not None and expires > time.time() and alive(holder) is not False


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Create the tables, or bring a store written by an earlier cgraph to this version;
    refuse one written by a later cgraph (its layout may mean something else)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"session store {path} has layout version {version}, newer than this cgraph's "
            f"{SCHEMA_VERSION}: upgrade cgraph to open it"
        )
    older = db.execute("SELECT 1 FROM sqlite_master WHERE name='events'").fetchone() is not None
    older = older and version < SCHEMA_VERSION
    if older and "msg" not in {row[1] for row in db.execute("PRAGMA tableinfo_row(events)")}:
        db.execute("ALTER TABLE events ADD COLUMN msg INTEGER")
    # One statement at a time: `executescript` would commit the migration's transaction.
    for statement in (_SCHEMA + _INDEXES + _LEASES + SQLITE_TABLE).split(";"):
        if statement.strip():
            db.execute(statement)
    if older:
        for (session,) in db.execute("SELECT id FROM sessions").fetchall():
            rows = db.execute(f"{_EVENTS} WHERE session=? ORDER BY seq", (session,)).fetchall()
            found, keys = replayed(_event(session, r) for r in rows)
            db.executemany(
                "UPDATE events SET msg=? WHERE session=? AND seq=?",
                [(at, session, seq) for seq, at in found.items()],
            )
            db.executemany(
                "INSERT OR REPLACE INTO keys VALUES (?,?,?,?)",
                [(session, key, turn, seq) for key, (turn, seq) in keys.items()],
            )
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _event(session_id: str, row: tuple[Any, ...]) -> Event:
    seq, turn, kind, at, data = row
    return Event.model_construct(
        seq=seq, session=session_id, turn=turn, kind=kind, at=at, data=json.loads(data)
    )


def migrate_file(path: Path) -> tuple[int, int]:
    """Create or upgrade the store at `path` (`cgraph store migrate`): (version before,
    version now)."""
    before = 0
    if path.is_file():
        try:
            with sqlite3.connect(path) as db:
                before = int(db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as err:
            raise StoreError(f"cannot open session store {path}: {err}") from err
    SQLiteStore(path).close()
    return before, SCHEMA_VERSION
