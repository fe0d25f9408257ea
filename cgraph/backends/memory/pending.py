"""Memories waiting for Chroma: a small SQLite outbox in the store's memory folder.

Importing chromadb costs a second and a half of CPU and 50 MB; a run that only stores
memories (the check-in keeps every turn) need not pay it. Such memories are written here
(durable at once, stdlib `sqlite3`) with the ids and times they will keep, and moved into
Chroma, with its duplicate checks, by the next process that opens the Chroma store
(`ChromaMemory` drains the outbox when it connects). A memory is never only here for a
reader: every read opens Chroma, which drains first.

The outbox keeps one connection open, in WAL mode with `synchronous=NORMAL`, like the
session store: a memory is in the log before `put` returns, so it survives the process
being killed at any instant, and a put costs no fsync. Opening and closing a connection
per put cost each turn 15-30 ms (closing the last connection checkpoints the file).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from cgraph.backends.memory.policy import SESSION_TIERS
from cgraph.errors import MemoryStoreError
from cgraph.runtime.ports import Memory, NewMemory
from cgraph.spec.model import Tier

OUTBOX_FILE = "pending.sqlite3"
_SCHEMA = """CREATE TABLE IF NOT EXISTS pending (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL, tier TEXT NOT NULL,
    session_id TEXT NOT NULL, state TEXT NOT NULL, turn INTEGER NOT NULL,
    created_at REAL NOT NULL)"""
_COLUMNS = "id, user_id, text, tier, session_id, state, turn, created_at"


class Outbox:
    """The memories of one memory folder that are not in Chroma yet."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / OUTBOX_FILE
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The open connection, in a transaction committed when the block ends."""
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._open()
                with self._connection as db:
                    yield db
            except sqlite3.Error as err:
                raise MemoryStoreError(f"memory outbox {self.path}: {err}") from err

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
        except sqlite3.Error:
            db.close()
            raise
        return db

    def put(self, user_id: str, items: Sequence[Memory]) -> None:
        """Keep `items` (stamped with their ids and times) until Chroma takes them."""
        rows = [
            (m.id, user_id, m.text, m.tier, m.session_id, m.state, m.turn, m.created_at)
            for m in items
        ]
        with self._db() as db:
            db.executemany(f"INSERT INTO pending ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", rows)

    def holds(
        self, user_id: str, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> bool:
        """True when `user_id` has memories waiting (in `tiers`, when given; with
        `session_id`, those that session may see, `policy.visible`); no file: none, and
        none is made."""
        if not self.path.is_file():
            return False
        query, args = "SELECT 1 FROM pending WHERE user_id = ?", [user_id]
        if tiers:
            query += f" AND tier IN ({','.join('?' * len(tiers))})"
            args += list(tiers)
        if session_id is not None:
            marks = ",".join("?" * len(SESSION_TIERS))
            query += f" AND (tier NOT IN ({marks}) OR session_id = ?)"
            args += [*sorted(SESSION_TIERS), session_id]
        with self._db() as db:
            return db.execute(f"{query} LIMIT 1", args).fetchone() is not None

    def drop(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        """Forget some (or, with `ids=None`, all) of a user's waiting memories."""
        if not self.path.is_file() or (ids is not None and not ids):
            return 0
        with self._db() as db:
            if ids is None:
                return db.execute("DELETE FROM pending WHERE user_id = ?", (user_id,)).rowcount
            marks = ",".join("?" * len(ids))
            query = f"DELETE FROM pending WHERE user_id = ? AND id IN ({marks})"
            return db.execute(query, (user_id, *ids)).rowcount

    def waiting(self) -> dict[str, list[NewMemory]]:
        """Every waiting memory by user, oldest first, as the store's `add` takes them."""
        if not self.path.is_file():
            return {}
        with self._db() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM pending ORDER BY created_at, rowid")
            found: dict[str, list[NewMemory]] = {}
            for id_, user, text, tier, session, state, turn, created in rows:
                item = NewMemory(text, tier, session, state, turn, id=id_, created_at=created)
                found.setdefault(user, []).append(item)
            return found
