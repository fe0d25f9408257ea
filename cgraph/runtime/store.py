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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from cgraph.errors import SessionNotFound, StoreError
from cgraph.runtime.records import Event

STORE_FILE = "sessions.sqlite"
Synchronous = Literal["OFF", "NORMAL", "FULL"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a store knows about a session besides its log and snapshot."""

    id: str
    user_id: str
    graph: str
    """The graph file the session was started with (absolute path, or "" if built in code)."""
    graph_name: str
    model: str
    created_at: float
    updated_at: float = 0.0
    turn: int = 0
    state: str = ""
    completed: bool = False


@dataclass(slots=True)
class StoredSession:
    """What `SessionStore.load` returns: the session's summary, last snapshot and events."""

    info: SessionInfo
    snapshot: dict[str, Any]
    events: list[Event] = field(default_factory=list)


@runtime_checkable
class SessionStore(Protocol):
    """The checkpoint store behind sessions."""

    def create(self, info: SessionInfo, snapshot: dict[str, Any], events: Sequence[Event]) -> None:
        """Record a new session with its first snapshot and events."""
        ...

    def commit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        drop_checkpoints_after: int | None = None,
    ) -> None:
        """One step, atomically: append `events`, replace the snapshot, and (at the end of a
        turn) keep it as the checkpoint of turn `checkpoint`."""
        ...

    def load(self, session_id: str) -> StoredSession:
        """The session's info, snapshot and whole event log; `SessionNotFound` if absent."""
        ...

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        """The snapshot as it was at the end of `turn` (0: when the session started)."""
        ...

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        """Stored sessions, most recently updated first."""
        ...

    def close(self) -> None:
        """Release the store's resources (a database connection); stored data is kept."""
        ...


def _summary(info: SessionInfo, snapshot: dict[str, Any], at: float) -> SessionInfo:
    stack = snapshot.get("stack") or [{}]
    top = stack[-1]
    state = f"{top.get('graph')}#{top.get('state')}" if top.get("graph") else top.get("state", "")
    return replace(
        info,
        updated_at=max(at, info.updated_at),
        turn=int(snapshot.get("turn", 0)),
        state=str(state),
        completed=bool(snapshot.get("completed", False)),
    )


def _last_at(events: Sequence[Event], default: float) -> float:
    return events[-1].at if events else default


class InMemorySessionStore:
    """A store that forgets everything when the process ends: for tests and throwaway runs."""

    def __init__(self) -> None:
        self._info: dict[str, SessionInfo] = {}
        self._snapshots: dict[str, str] = {}
        self._events: dict[str, list[Event]] = {}
        self._checkpoints: dict[tuple[str, int], str] = {}
        # The listing's summary (turn, state) is derived from the snapshot when asked for,
        # not rebuilt at every step's commit.
        self._updated: dict[str, float] = {}

    def create(self, info: SessionInfo, snapshot: dict[str, Any], events: Sequence[Event]) -> None:
        if info.id in self._info:
            raise StoreError(f"session `{info.id}` already exists")
        self._info[info.id] = info
        self._updated[info.id] = info.created_at
        self._events[info.id] = list(events)
        # Kept as text so a caller mutating its snapshot afterwards cannot change the store.
        self._snapshots[info.id] = _dumps(snapshot)
        self._checkpoints[(info.id, 0)] = self._snapshots[info.id]

    def commit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        drop_checkpoints_after: int | None = None,
    ) -> None:
        self._require(session_id)
        log = self._events[session_id]
        if events and log and events[0].seq <= log[-1].seq:
            raise StoreError(f"event {events[0].seq} of `{session_id}` was already committed")
        text = _dumps(snapshot)
        log.extend(events)
        self._snapshots[session_id] = text
        self._updated[session_id] = _last_at(events, self._updated[session_id])
        if drop_checkpoints_after is not None:
            for key in [k for k in self._checkpoints if k[0] == session_id]:
                if key[1] > drop_checkpoints_after:
                    del self._checkpoints[key]
        if checkpoint is not None:
            self._checkpoints[(session_id, checkpoint)] = text

    def load(self, session_id: str) -> StoredSession:
        info = self._require(session_id)
        snapshot = json.loads(self._snapshots[session_id])
        info = _summary(info, snapshot, self._updated[session_id])
        return StoredSession(info, snapshot, list(self._events[session_id]))

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        text = self._checkpoints.get((session_id, turn))
        return json.loads(text) if text is not None else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        found = [
            _summary(i, json.loads(self._snapshots[i.id]), self._updated[i.id])
            for i in self._info.values()
            if user_id is None or i.user_id == user_id
        ]
        return sorted(found, key=lambda i: i.updated_at, reverse=True)

    def close(self) -> None:
        return None

    def _require(self, session_id: str) -> SessionInfo:
        info = self._info.get(session_id)
        if info is None:
            raise SessionNotFound(f"no session `{session_id}` in this store")
        return info


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
        text = _dumps(snapshot)
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
        text = _dumps(snapshot)
        with self._transaction() as db:
            at = _last_at(events, 0.0)
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
                [(session_id, e.seq, e.turn, e.kind, e.at, _dumps(e.data)) for e in events],
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


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
"""One encoder for every write (a snapshot and each event, at every step): `json.dumps` with
options builds a new encoder per call, a fifth of what encoding cost a step."""


def _dumps(data: Any) -> str:
    return _ENCODER.encode(data)


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
    return _summary(base, snapshot, row[6])


def open_store(store: Any) -> SessionStore:
    """A `SessionStore` as given, a folder (→ `<folder>/sessions.sqlite`), a `.sqlite` file,
    or None (in memory)."""
    if store is None:
        return InMemorySessionStore()
    if isinstance(store, str | Path):
        path = Path(store)
        if path.suffix in (".sqlite", ".db", ".sqlite3"):
            return SQLiteStore(path)
        return SQLiteStore(path / STORE_FILE)
    if isinstance(store, SessionStore):
        return store
    raise StoreError(
        f"store must be a folder, a .sqlite file, a SessionStore or None, not {store!r}"
    )
