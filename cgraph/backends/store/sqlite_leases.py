"""The SQLite store's leases: a row of `leases` per session, which every process on the
machine sees, taken, renewed and let go in short transactions of their own, and checked by
every write in the write's transaction (`fenced`). The lease of a holder that died (its
process gone) is free at once, not only when it expires.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from cgraph.backends.store.leases import alive, lost
from cgraph.backends.store.sqlite_file import SQLiteFile
from cgraph.runtime.ports import Lease

_LEASE = "SELECT holder, expires, fence FROM leases WHERE session=?"


class SQLiteLeases:
    """The `leases` table of a SQLite file: what `SessionStore.acquire`, `renew` and
    `release` do there."""

    def __init__(self, file: SQLiteFile) -> None:
        self.file = file

    def acquire(self, session_id: str, holder: str, ttl: float) -> Lease | None:
        with self.file.transaction() as db:
            row = db.execute(_LEASE, (session_id,)).fetchone()
            if row is not None and _in_force(row):
                return None
            now = time.time()
            lease = Lease(session_id, holder, (row[2] if row else 0) + 1, now + ttl)
            db.execute(
                "INSERT OR REPLACE INTO leases VALUES (?,?,?,?)",
                (session_id, lease.holder, lease.expires, lease.fence),
            )
            return lease

    def renew(self, leases: Sequence[Lease], ttl: float) -> list[Lease]:
        expires = time.time() + ttl
        renewed = []
        with self.file.transaction() as db:
            for lease in leases:
                if db.execute(
                    "UPDATE leases SET expires=? WHERE session=? AND holder=? AND fence=?",
                    (expires, lease.session_id, lease.holder, lease.fence),
                ).rowcount:
                    renewed.append(Lease(lease.session_id, lease.holder, lease.fence, expires))
        return renewed

    def release(self, lease: Lease) -> None:
        with self.file.transaction() as db:
            db.execute(
                "UPDATE leases SET holder=NULL WHERE session=? AND holder=? AND fence=?",
                (lease.session_id, lease.holder, lease.fence),
            )


def fenced(db: sqlite3.Connection, session_id: str, given: int | None) -> None:
    """`LeaseLost` unless a write with fence `given` may go: the lease in force's, or none
    when no lease is in force."""
    row = db.execute(_LEASE, (session_id,)).fetchone()
    if given is None:
        ok = row is None or not _in_force(row)
    else:
        ok = row is not None and row[0] is not None and row[2] == given
    if not ok:
        raise lost(session_id, given)


def _in_force(row: tuple[Any, ...]) -> bool:
    """A lease row another may not take: held, unexpired, by a holder not known dead."""
    holder, expires, _ = row
    return holder is not None and expires > time.time() and alive(holder) is not False
