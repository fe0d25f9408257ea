"""The webhook outbox: deliveries waiting to be POSTed, kept with the sessions — the table
`cgraph_webhook_deliveries` of the SQLite file or the PostgreSQL database — and written by
the store's own commits (`SessionStore.commit(deliveries=…)`): a turn's events are in the
outbox exactly when the turn is committed, so a process killed right after a reply loses
none of them.

What is here is the dispatcher's side, on a connection of its own: several processes may
share one outbox, and a delivery is *claimed* (its next attempt pushed a lease ahead)
before it is sent, so two dispatchers do not send it at once; a dispatcher that dies lets
the lease run out and another sends it (at least once).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from cgraph.errors import StoreError
from cgraph.runtime.ports import Delivery

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
assert tuple(f.name for f in fields(Delivery)) == COLUMNS

SQLITE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (id TEXT PRIMARY KEY, event_id TEXT NOT NULL,
    destination TEXT NOT NULL, type TEXT NOT NULL, owner TEXT NOT NULL, body TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL, next_at REAL NOT NULL, last_error TEXT,
    created_at REAL NOT NULL, delivered_at REAL);
CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} (status, next_at);
CREATE INDEX IF NOT EXISTS {TABLE}_owner ON {TABLE} (owner, created_at);
"""
"""The SQLite store's outbox (its layout 4)."""
POSTGRES_TABLE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (id text PRIMARY KEY, event_id text NOT NULL,
    destination text NOT NULL, type text NOT NULL, owner text NOT NULL, body text NOT NULL,
    status text NOT NULL, attempts int NOT NULL, next_at float8 NOT NULL, last_error text,
    created_at float8 NOT NULL, delivered_at float8);
CREATE INDEX IF NOT EXISTS {TABLE}_due ON {TABLE} (status, next_at);
CREATE INDEX IF NOT EXISTS {TABLE}_owner ON {TABLE} (owner, created_at);
"""
"""The PostgreSQL store's outbox (its migration 4)."""
SQLITE_INSERT = f"INSERT OR IGNORE INTO {TABLE} VALUES ({', '.join('?' * len(COLUMNS))})"
"""How a store's commit adds deliveries: one already there (by its id) is left as it is
(a turn's last step committed again after a failed attempt)."""


def values(deliveries: Sequence[Delivery]) -> list[tuple[Any, ...]]:
    """The rows of `deliveries`, in `COLUMNS` order."""
    return [tuple(getattr(d, c) for c in COLUMNS) for d in deliveries]


def _row(row: Sequence[Any]) -> Delivery:
    return Delivery(*row)


class SQLiteOutbox:
    """The outbox table of a SQLite session store, on a connection of its own."""

    def __init__(self, path: Path) -> None:
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
        except sqlite3.Error as err:
            raise StoreError(f"webhook outbox {path}: {err}") from err
        self.path = path
        self._lock = threading.Lock()

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as err:
                raise StoreError(f"webhook outbox {self.path}: {err}") from err

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        """Up to `limit` pending deliveries due by `now`, each leased until `now + lease`."""
        due = f"SELECT {', '.join(COLUMNS)} FROM {TABLE} WHERE status = 'pending' AND "
        due += "next_at <= ? ORDER BY next_at LIMIT ?"
        with self._lock:  # a read first: the poll takes the file's write lock only for work
            try:
                if not self._db.execute(due, (now, 1)).fetchone():
                    return []
            except sqlite3.Error as err:
                raise StoreError(f"webhook outbox {self.path}: {err}") from err
        with self._writing() as db:
            found = db.execute(due, (now, limit)).fetchall()
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
                _settled(delivery),
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


def _settled(delivery: Delivery) -> tuple[Any, ...]:
    return (
        delivery.status,
        delivery.attempts,
        delivery.next_at,
        delivery.last_error,
        delivery.delivered_at,
        delivery.id,
    )


class PostgresOutbox:
    """The outbox table of a PostgreSQL store, on one connection of its own."""

    def __init__(self, url: str) -> None:
        import psycopg

        self._psycopg = psycopg
        self._url = url
        self._lock = threading.Lock()
        self._conn: Any = None

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
                _settled(delivery),
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


class MemoryOutbox:
    """The outbox of an in-memory store: its deliveries, under its lock."""

    def __init__(self, rows: dict[str, Delivery], lock: threading.Lock) -> None:
        self._rows, self._lock = rows, lock

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]:
        with self._lock:
            due = sorted(
                (d for d in self._rows.values() if d.status == "pending" and d.next_at <= now),
                key=lambda d: d.next_at,
            )[:limit]
            for delivery in due:
                self._rows[delivery.id] = replace(delivery, next_at=now + lease)
        return due

    def settle(self, delivery: Delivery) -> None:
        with self._lock:
            if delivery.id in self._rows:
                self._rows[delivery.id] = delivery

    def deliveries(self, owner: str, status: str | None, limit: int) -> list[Delivery]:
        with self._lock:
            found = [
                d
                for d in self._rows.values()
                if d.owner == owner and (status is None or d.status == status)
            ]
        found.sort(key=lambda d: (-d.created_at, d.id))
        return found[:limit]

    def close(self) -> None:
        pass
