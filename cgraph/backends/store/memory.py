"""A store that forgets everything when the process ends: for tests and throwaway runs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from cgraph.backends.store.leases import LEASE_SECONDS, Holding, Leased, lost
from cgraph.backends.store.outbox import MemoryOutbox
from cgraph.backends.store.rows import (
    check_quota,
    dumps,
    in_effect,
    key_of,
    last_at,
    missing,
    place,
    summary_row,
)
from cgraph.errors import SessionExists, StoreError
from cgraph.runtime.ports import Delivery, Lease, SessionInfo, Standing, StoredSession
from cgraph.runtime.state.records import Event


class InMemorySessionStore(Leased):
    """A store that forgets everything when the process ends: for tests and throwaway runs."""

    shared = False
    """Its sessions are this process's alone."""

    def __init__(
        self, *, lease: float = LEASE_SECONDS, sessions_per_user: int | None = None
    ) -> None:
        self.sessions_per_user = sessions_per_user
        self._creating = threading.Lock()
        self.leases = Holding(self, lease)
        self._guard = threading.Lock()
        self._leases: dict[str, tuple[str | None, float, int]] = {}
        """Per session: (holder or None once let go, expiry on the monotonic clock, fence);
        kept when the session is deleted, so a fence never goes down."""
        self._info: dict[str, SessionInfo] = {}
        self._snapshots: dict[str, str] = {}
        self._events: dict[str, list[Event]] = {}
        self._checkpoints: dict[tuple[str, int], str] = {}
        self._keys: dict[tuple[str, str], tuple[int, int]] = {}
        # The listing's summary (turn, state) is derived from the snapshot when asked for,
        # not rebuilt at every step's commit.
        self._updated: dict[str, float] = {}
        self._deliveries: dict[str, Delivery] = {}
        self._sending = threading.Lock()

    def create(
        self,
        info: SessionInfo,
        snapshot: dict[str, Any],
        events: Sequence[Event],
        *,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        self._fenced(info.id, fence)
        with self._creating:  # the count and the insert as one
            if info.id in self._info:
                raise SessionExists(f"session `{info.id}` already exists")
            kept = sum(1 for i in self._info.values() if i.user_id == info.user_id)
            check_quota(kept, self.sessions_per_user)
            self._info[info.id] = info
        self._updated[info.id] = info.created_at
        self._events[info.id] = []
        self._append(info.id, events)
        # Kept as text so a caller mutating its snapshot afterwards cannot change the store.
        self._snapshots[info.id] = dumps(snapshot)
        self._checkpoints[(info.id, 0)] = self._snapshots[info.id]
        self._keep(deliveries)

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
        self._require(session_id)
        self._fenced(session_id, fence)
        log = self._events[session_id]
        if events and log and events[0].seq <= log[-1].seq:
            raise StoreError(f"event {events[0].seq} of `{session_id}` was already committed")
        text = dumps(snapshot)
        if rewind_to is not None:
            for turn_key in [k for k in self._checkpoints if k[0] == session_id]:
                if turn_key[1] > rewind_to:
                    del self._checkpoints[turn_key]
            # The key of an undone turn may be sent again.
            for key in [
                k for k, v in self._keys.items() if k[0] == session_id and v[0] > rewind_to
            ]:
                del self._keys[key]
        self._append(session_id, events)
        self._snapshots[session_id] = text
        self._updated[session_id] = last_at(events, self._updated[session_id])
        if checkpoint is not None:
            self._checkpoints[(session_id, checkpoint)] = text
        self._keep(deliveries)

    def _keep(self, deliveries: Sequence[Delivery]) -> None:
        with self._sending:
            for delivery in deliveries:
                self._deliveries.setdefault(delivery.id, delivery)

    def outbox(self) -> MemoryOutbox:
        """The deliveries this store's commits added (gone with the process)."""
        return MemoryOutbox(self._deliveries, self._sending)

    def append(self, session_id: str, events: Sequence[Event], *, fence: int | None = None) -> None:
        self._require(session_id)
        self._fenced(session_id, fence)
        log = self._events[session_id]
        if events and log and events[0].seq <= log[-1].seq:
            raise StoreError(f"event {events[0].seq} of `{session_id}` was already committed")
        self._append(session_id, events)
        self._updated[session_id] = last_at(events, self._updated[session_id])

    def load(self, session_id: str) -> StoredSession:
        info = self._require(session_id)
        snapshot = json.loads(self._snapshots[session_id])
        info = summary_row(info, snapshot, self._updated[session_id])
        since = int(snapshot.get("turn_seq", 0))
        return StoredSession(info, snapshot, self.events(session_id, after=since - 1))

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        self._require(session_id)
        found = [e for e in self._events[session_id] if e.seq > after]
        return found if limit is None else found[:limit]

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        self._require(session_id)
        return in_effect(((place(e), e) for e in self._events[session_id]), start, end)

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        return self._keys.get((session_id, str(key)))

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        info = self._require(session_id)
        seq = json.loads(self._snapshots[session_id]).get("seq")
        keyed = None if key is None else self.turn_of_key(session_id, key)
        return Standing(info.created_at, seq, keyed)

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        text = self._checkpoints.get((session_id, turn))
        return json.loads(text) if text is not None else None

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        found = [
            summary_row(i, json.loads(self._snapshots[i.id]), self._updated[i.id])
            for i in self._info.values()
            if user_id is None or i.user_id == user_id
        ]
        return sorted(found, key=lambda i: i.updated_at, reverse=True)

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        if session_id in self._info:
            self._fenced(session_id, fence)
        if self._info.pop(session_id, None) is None:
            return False
        for table in (self._snapshots, self._events, self._updated):
            table.pop(session_id, None)
        for checkpoint in [k for k in self._checkpoints if k[0] == session_id]:
            del self._checkpoints[checkpoint]
        for key in [k for k in self._keys if k[0] == session_id]:
            del self._keys[key]
        return True

    # ----- leases: one process's, so its own clock and a lock are enough ----------------

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None:
        with self._guard:
            holder, expires, fence = self._leases.get(session_id, (None, 0.0, 0))
            now = time.monotonic()
            if holder is not None and expires > now:
                return None
            stood = self.standing(session_id, key) if session_id in self._snapshots else None
            lease = Lease(session_id, self.leases.holder, fence + 1, now + ttl, stood)
            self._leases[session_id] = (lease.holder, lease.expires, lease.fence)
            return lease

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        renewed = []
        with self._guard:
            for lease in leases:
                holder, _, fence = self._leases.get(lease.session_id, (None, 0.0, 0))
                if (holder, fence) == (lease.holder, lease.fence):
                    expires = time.monotonic() + ttl
                    self._leases[lease.session_id] = (holder, expires, fence)
                    renewed.append(Lease(lease.session_id, lease.holder, fence, expires))
        return renewed

    def release(self, lease: Lease) -> None:
        with self._guard:
            holder, expires, fence = self._leases.get(lease.session_id, (None, 0.0, 0))
            if (holder, fence) == (lease.holder, lease.fence):
                self._leases[lease.session_id] = (None, expires, fence)

    def close(self) -> None:
        return None

    def _fenced(self, session_id: str, fence: int | None) -> None:
        """`LeaseLost` unless a write with `fence` (by default the held lease's) may go."""
        given = self.leases.fence(session_id, fence)
        with self._guard:
            holder, expires, current = self._leases.get(session_id, (None, 0.0, 0))
        if given is None:
            ok = holder is None or expires <= time.monotonic()
        else:
            ok = holder is not None and given == current
        if not ok:
            raise lost(session_id, given)

    def _append(self, session_id: str, events: Sequence[Event]) -> None:
        self._events[session_id].extend(events)
        for event in events:
            key = key_of(event)
            if key is not None:
                self._keys[(session_id, key)] = (event.turn, event.seq)

    def _require(self, session_id: str) -> SessionInfo:
        info = self._info.get(session_id)
        if info is None:
            raise missing(session_id, "this store")
        return info
