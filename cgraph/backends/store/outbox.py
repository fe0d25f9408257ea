"""The webhook outbox: deliveries waiting to be POSTed, kept where the sessions are — a
`webhooks.sqlite` beside a SQLite store (its own file, so a delivery never waits on a
turn's write lock), or the `cgraph_webhook_deliveries` table of a PostgreSQL store — so
that what a server had to send survives its restart.

Several processes may share one outbox: a delivery is *claimed* (its next attempt pushed a
lease ahead) before it is sent, so two dispatchers do not send it at once; a dispatcher
that dies lets the lease run out and another sends it (at least once).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol

from cgraph.errors import StoreError

TABLE = "cgraph_webhook_deliveries"
COLUMNS = (
    "id",
    "event_id",
    "destination",
    "type",
    "owner",
    "body",
    "status",
    "attempts",
    "next_at",
    "last_error",
    "created_at",
    "delivered_at",
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one destination, and how its sending went."""

    id: str
    """The event id and the destination's: unique per delivery."""
    event_id: str
    """What a receiver deduplicates by (the same on every attempt)."""
    destination: str
    type: str
    owner: str
    """The user whose session the event is of."""
    body: str
    status: str = "pending"
    """`pending`, `delivered` or `failed` (given up after the last attempt)."""
    attempts: int = 0
    next_at: float = 0.0
    last_error: str | None = None
    created_at: float = 0.0
    delivered_at: float | None = None


assert tuple(f.name for f in fields(Delivery)) == COLUMNS


class Outbox(Protocol):
    """Where deliveries wait (SQLite or PostgreSQL)."""

    def add(self, deliveries: Sequence[Delivery]) -> None: ...

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]: ...

    def settle(self, delivery: Delivery) -> None: ...

    def deliveries(self, owner: str, status: str | None, limit: int) -> list[Delivery]: ...

    def close(self) -> None: ...


def _row(values: Sequence[Any]) -> Delivery:
    return Delivery(*values)


class SQLiteOutbox:
    """The outbox in a SQLite file of its own."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (id TEXT PRIMARY KEY, event_id TEXT, "
                "destination TEXT, type TEXT, owner TEXT, body TEXT, status TEXT, "
                "attempts INTEGER, next_at REAL, last_error TEXT, created_at REAL, "
                "delivered_at REAL)"
            )
            self._db.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} (status, next_at)")
        except sqlite3.Error as err:
            raise StoreError(f"webhook outbox {path}: {err}") from err
        self._lock = threading.Lock()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def add(self, deliveries: Sequence[Delivery]) -> None:
        """Keep `deliveries` (one already kept, by its id, is left as it is)."""
        marks = ", ".join("?" * len(COLUMNS))
        with self._writing() as db:
            db.executemany(
                f"INSERT OR IGNORE INTO {TABLE} VALUES ({marks})",
                [tuple(getattr(d, c) for c in COLUMNS) for d in deliveries],
            )

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        """Up to `limit` pending deliveries due by `now`, each leased until `now + lease`."""
        with self._writing() as db:
            found = db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE status = 'pending' AND "
                "next_at <= ? ORDER BY next_at LIMIT ?",
                (now, limit),
            ).fetchall()
            db.executemany(
                f"UPDATE {TABLE} SET next_at = ? WHERE id = ?",
                [(now + lease, row[0]) for row in found],
            )
        return [_row(row) for row in found]

    def settle(self, delivery: Delivery) -> None:
        """Record how an attempt went (status, attempts, next attempt, error)."""
        with self._writing() as db:
            db.execute(
                f"UPDATE {TABLE} SET status = ?, attempts = ?, next_at = ?, last_error = ?, "
                "delivered_at = ? WHERE id = ?",
                (
                    delivery.status,
                    delivery.attempts,
                    delivery.next_at,
                    delivery.last_error,
                    delivery.delivered_at,
                    delivery.id,
                ),
            )

    def deliveries(self, owner: str, status: str | None, limit: int) -> list[Delivery]:
        """`owner`'s deliveries, the latest first (of one status, if given)."""
        where, args = "owner = ?", [owner]
        if status is not None:
            where, args = where + " AND status = ?", [*args, status]
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE {where} "
                "ORDER BY created_at DESC, id LIMIT ?",
                (*args, limit),
            ).fetchall()
        return [_row(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresOutbox:
    """The outbox as a table of the PostgreSQL store, on one connection of its own."""

    def __init__(self, url: str) -> None:
        import psycopg

        self._psycopg = psycopg
        self._url = url
        self._lock = threading.Lock()
        self._conn: Any = None
        with self._cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (TABLE,))
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (id TEXT PRIMARY KEY, event_id TEXT NOT "
                "NULL, destination TEXT NOT NULL, type TEXT NOT NULL, owner TEXT NOT NULL, "
                "body TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, "
                "next_at DOUBLE PRECISION NOT NULL, last_error TEXT, created_at DOUBLE "
                "PRECISION NOT NULL, delivered_at DOUBLE PRECISION)"
            )
            cur.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} (status, next_at)")

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor in one transaction (the connection opened again if it was lost)."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._psycopg.connect(self._url, connect_timeout=10)
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            except self._psycopg.Error as err:
                if self._conn is not None and self._conn.broken:
                    self._conn = None
                raise StoreError(f"webhook outbox: {err}") from err

    def add(self, deliveries: Sequence[Delivery]) -> None:
        marks = ", ".join(["%s"] * len(COLUMNS))
        with self._cursor() as cur:
            cur.executemany(
                f"INSERT INTO {TABLE} VALUES ({marks}) ON CONFLICT (id) DO NOTHING",
                [tuple(getattr(d, c) for c in COLUMNS) for d in deliveries],
            )

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        with self._cursor() as cur:
            cur.execute(
                f"UPDATE {TABLE} SET next_at = %s WHERE id IN (SELECT id FROM {TABLE} WHERE "
                "status = 'pending' AND next_at <= %s ORDER BY next_at LIMIT %s FOR UPDATE "
                f"SKIP LOCKED) RETURNING {', '.join(COLUMNS)}",
                (now + lease, now, limit),
            )
            rows = cur.fetchall()
        return [_row(row) for row in rows]

    def settle(self, delivery: Delivery) -> None:
        with self._cursor() as cur:
            cur.execute(
                f"UPDATE {TABLE} SET status = %s, attempts = %s, next_at = %s, last_error = %s, "
                "delivered_at = %s WHERE id = %s",
                (
                    delivery.status,
                    delivery.attempts,
                    delivery.next_at,
                    delivery.last_error,
                    delivery.delivered_at,
                    delivery.id,
                ),
            )

    def deliveries(self, owner: str, status: str | None, limit: int) -> list[Delivery]:
        where, args = "owner = %s", [owner]
        if status is not None:
            where, args = where + " AND status = %s", [*args, status]
        with self._cursor() as cur:
            cur.execute(
                f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE {where} "
                "ORDER BY created_at DESC, id LIMIT %s",
                (*args, limit),
            )
            rows = cur.fetchall()
        return [_row(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
