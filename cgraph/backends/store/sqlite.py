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
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cgraph.backends.store.leases import LEASE_SECONDS, Holding, Leased
from cgraph.backends.store.outbox import SQLITE_INSERT, SQLiteOutbox, values
from cgraph.backends.store.rows import (
    SCHEMA_VERSION,
    check_quota,
    dumps,
    in_effect,
    info_row,
    key_of,
    last_at,
    missing,
    place,
    standing_row,
)
from cgraph.backends.store.sqlite_file import EVENTS, SQLiteFile, Synchronous, event_of
from cgraph.backends.store.sqlite_leases import SQLiteLeases, fenced
from cgraph.errors import SessionExists, SessionNotFound, StoreError
from cgraph.runtime.ports import Delivery, Lease, SessionInfo, Standing, StoredSession
from cgraph.runtime.state.records import Event


class SQLiteStore(Leased):
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
        self._file = SQLiteFile(self.path, synchronous)
        self._lease_rows = SQLiteLeases(self._file)

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
        with self._file.transaction() as db:  # BEGIN IMMEDIATE: the count and the insert as one
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
        with self._file.transaction() as db:
            self._fenced(db, session_id, fence)
            at = last_at(events, 0.0)
            changed = db.execute(
                "UPDATE sessions SET snapshot=?, updated_at=max(updated_at, ?) WHERE id=?",
                (text, at, session_id),
            ).rowcount
            if not changed:
                raise missing(session_id, self.path)
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
        with self._file.transaction() as db:
            self._require(db, session_id)
            self._fenced(db, session_id, fence)
            self._append(db, session_id, events)

    def load(self, session_id: str) -> StoredSession:
        with self._file.reading() as db:
            row = db.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
            if row is None:
                raise missing(session_id, self.path)
            snapshot = json.loads(row[7])
            rows = db.execute(
                f"{EVENTS} WHERE session=? AND seq>=? ORDER BY seq",
                (session_id, int(snapshot.get("turn_seq", 0))),
            ).fetchall()
        events = [event_of(session_id, r) for r in rows]
        return StoredSession(info_row(row, snapshot), snapshot, events)

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        with self._file.reading() as db:
            self._require(db, session_id)
            rows = db.execute(
                f"{EVENTS} WHERE session=? AND seq>? ORDER BY seq LIMIT ?",
                (session_id, after, -1 if limit is None else limit),
            ).fetchall()
        return [event_of(session_id, r) for r in rows]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        with self._file.reading() as db:
            self._require(db, session_id)
            # Sorted here: with `ORDER BY seq` SQLite walks the session's whole log by its
            # primary key instead of the places' index (a resume then grew with the session).
            rows = db.execute(
                "SELECT seq, turn, kind, at, data, msg FROM events"
                " WHERE session=? AND msg>=? AND msg<?",
                (session_id, start, end),
            ).fetchall()
            rows.sort(key=lambda row: int(row[0]))
        return in_effect(((r[5], event_of(session_id, r[:5])) for r in rows), start, end)

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        with self._file.reading() as db:
            row = db.execute(
                "SELECT turn, seq FROM keys WHERE session=? AND key=?", (session_id, str(key))
            ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        with self._file.reading() as db:
            row = db.execute(
                "SELECT s.created_at, s.snapshot, k.turn, k.seq FROM sessions s"
                " LEFT JOIN keys k ON k.session = s.id AND k.key = ? WHERE s.id = ?",
                (None if key is None else str(key), session_id),
            ).fetchone()
        if row is None:
            raise missing(session_id, self.path)
        return standing_row(row[0], json.loads(row[1]), row[2], row[3])

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        with self._file.transaction() as db:
            self._fenced(db, session_id, fence)
            for table in ("events", "checkpoints", "keys"):
                db.execute(f"DELETE FROM {table} WHERE session=?", (session_id,))
            return bool(db.execute("DELETE FROM sessions WHERE id=?", (session_id,)).rowcount)

    def _require(self, db: sqlite3.Connection, session_id: str) -> None:
        found = db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
        if found is None:
            raise missing(session_id, self.path)

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        with self._file.reading() as db:
            row = db.execute(
                "SELECT snapshot FROM checkpoints WHERE session=? AND turn=?", (session_id, turn)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        query = "SELECT * FROM sessions"
        args: tuple[str, ...] = ()
        if user_id is not None:
            query, args = query + " WHERE user_id=?", (user_id,)
        with self._file.reading() as db:
            rows = db.execute(query + " ORDER BY updated_at DESC", args).fetchall()
        return [info_row(r, json.loads(r[7])) for r in rows]

    # ----- leases (`sqlite_leases`; `hold` is every store's, `Leased`) ----------------------

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None:
        lease = self._lease_rows.acquire(session_id, self.leases.holder, ttl)
        if lease is None:
            return None
        try:  # read once the lease is in force: a local file, a second read costs little
            return replace(lease, standing=self.standing(session_id, key))
        except SessionNotFound:
            return lease

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        return self._lease_rows.renew(leases, ttl)

    def release(self, lease: Lease) -> None:
        self._lease_rows.release(lease)

    def _fenced(self, db: sqlite3.Connection, session_id: str, fence: int | None) -> None:
        """`LeaseLost` unless a write with `fence` (by default the held lease's) may go."""
        fenced(db, session_id, self.leases.fence(session_id, fence))

    def outbox(self) -> SQLiteOutbox:
        """The outbox table of this file (`cgraph.backends.store.outbox`)."""
        return SQLiteOutbox(self.path)

    def close(self) -> None:
        self._file.close()

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
