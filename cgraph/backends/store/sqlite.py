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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from cgraph.backends.store.rows import dumps, last_at, summary_row
from cgraph.errors import SessionNotFound, StoreError
from cgraph.runtime.ports import SessionInfo, StoredSession
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
    at REAL NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    session TEXT NOT NULL, turn INTEGER NOT NULL, snapshot TEXT NOT NULL,
    PRIMARY KEY (session, turn)) WITHOUT ROWID;
"""


class SQLiteStore:
    """Sessions in one SQLite file (stdlib `sqlite3`, WAL journal).

    `synchronous="NORMAL"` (the default) makes every commit survive the process being
    killed at any instant — the WAL is written before `commit` returns — and skips the
    fsync per commit; only a power cut or OS crash can lose the last few steps. Use
    `"FULL"` to fsync every step when that matters more than speed.
    """

    def __init__(self, path: str | Path, *, synchronous: Synchronous = "NORMAL") -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(
                f"cannot create the session store folder {self.path.parent}: {err.strerror or err}"
            ) from err
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open session store {self.path}: {err}") from err

    def create(self, info: SessionInfo, snapshot: dict[str, Any], events: Sequence[Event]) -> None:
        text = dumps(snapshot)
        row = (info.id, info.user_id, info.graph, info.graph_name, info.model)
        with self._transaction() as db:
            try:
                db.execute(
                    "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?)",
                    (*row, info.created_at, info.created_at, text),
                )
            except sqlite3.IntegrityError as err:
                raise StoreError(f"session `{info.id}` already exists") from err
            self._append(db, info.id, events)
            db.execute("INSERT INTO checkpoints VALUES (?,?,?)", (info.id, 0, text))

    def commit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        drop_checkpoints_after: int | None = None,
    ) -> None:
        text = dumps(snapshot)
        with self._transaction() as db:
            at = last_at(events, 0.0)
            changed = db.execute(
                "UPDATE sessions SET snapshot=?, updated_at=max(updated_at, ?) WHERE id=?",
                (text, at, session_id),
            ).rowcount
            if not changed:
                raise SessionNotFound(f"no session `{session_id}` in {self.path}")
            self._append(db, session_id, events)
            if drop_checkpoints_after is not None:
                db.execute(
                    "DELETE FROM checkpoints WHERE session=? AND turn>?",
                    (session_id, drop_checkpoints_after),
                )
            if checkpoint is not None:
                db.execute(
                    "INSERT OR REPLACE INTO checkpoints VALUES (?,?,?)",
                    (session_id, checkpoint, text),
                )

    def load(self, session_id: str) -> StoredSession:
        with self._lock:
            row = self._db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(f"no session `{session_id}` in {self.path}")
            rows = self._db.execute(
                "SELECT seq, turn, kind, at, data FROM events WHERE session=? ORDER BY seq",
                (session_id,),
            ).fetchall()
        snapshot = json.loads(row[7])
        events = [_event(session_id, r) for r in rows]
        return StoredSession(_info(row, snapshot), snapshot, events)

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
        return [_info(r, json.loads(r[7])) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _append(self, db: sqlite3.Connection, session_id: str, events: Sequence[Event]) -> None:
        try:
            db.executemany(
                "INSERT INTO events VALUES (?,?,?,?,?,?)",
                [(session_id, e.seq, e.turn, e.kind, e.at, dumps(e.data)) for e in events],
            )
        except sqlite3.IntegrityError as err:
            raise StoreError(f"an event of `{session_id}` was already committed") from err

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


def _event(session_id: str, row: tuple[Any, ...]) -> Event:
    seq, turn, kind, at, data = row
    return Event.model_construct(
        seq=seq, session=session_id, turn=turn, kind=kind, at=at, data=json.loads(data)
    )


def _info(row: tuple[Any, ...], snapshot: dict[str, Any]) -> SessionInfo:
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
