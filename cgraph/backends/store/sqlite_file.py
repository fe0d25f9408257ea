"""The SQLite store's file: its tables, brought to this cgraph's layout when it is opened,
and the one connection a store keeps to it (WAL journal), lent under a lock for a read or
for one `BEGIN IMMEDIATE` transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from cgraph.backends.store.outbox import SQLITE_TABLE
from cgraph.backends.store.rows import SCHEMA_VERSION, replayed
from cgraph.errors import StoreError
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

EVENTS = "SELECT seq, turn, kind, at, data FROM events"
"""An event's columns, in the order `event_of` reads them."""


class SQLiteFile:
    """One SQLite file of sessions: created or upgraded when opened, and its connection,
    used by one thread at a time (a store's reads and its transactions)."""

    def __init__(self, path: Path, synchronous: Synchronous) -> None:
        self.path = path
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
            with self.transaction() as db:
                migrate(db, self.path)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open session store {self.path}: {err}") from err

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection; a closed file opens it again when it is used (a session's
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

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, for statements that only read."""
        with self._lock:
            yield self._db

    def transaction(self) -> _Transaction:
        """The connection in one `BEGIN IMMEDIATE` transaction, under the lock."""
        return _Transaction(self._db, self._lock, self.path)

    def close(self) -> None:
        with self._lock:
            if self._open is not None:
                self._open.close()
                self._open = None


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


def migrate(db: sqlite3.Connection, path: Path) -> None:
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
    if older and "msg" not in {row[1] for row in db.execute("PRAGMA table_info(events)")}:
        db.execute("ALTER TABLE events ADD COLUMN msg INTEGER")
    # One statement at a time: `executescript` would commit the migration's transaction.
    for statement in (_SCHEMA + _INDEXES + _LEASES + SQLITE_TABLE).split(";"):
        if statement.strip():
            db.execute(statement)
    if older:
        for (session,) in db.execute("SELECT id FROM sessions").fetchall():
            rows = db.execute(f"{EVENTS} WHERE session=? ORDER BY seq", (session,)).fetchall()
            found, keys = replayed(event_of(session, r) for r in rows)
            db.executemany(
                "UPDATE events SET msg=? WHERE session=? AND seq=?",
                [(at, session, seq) for seq, at in found.items()],
            )
            db.executemany(
                "INSERT OR REPLACE INTO keys VALUES (?,?,?,?)",
                [(session, key, turn, seq) for key, (turn, seq) in keys.items()],
            )
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def event_of(session_id: str, row: tuple[Any, ...]) -> Event:
    """An `EVENTS` row as its event."""
    seq, turn, kind, at, data = row
    return Event.model_construct(
        seq=seq, session=session_id, turn=turn, kind=kind, at=at, data=json.loads(data)
    )
