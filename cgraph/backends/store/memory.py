"""A store that forgets everything when the process ends: for tests and throwaway runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cgraph.backends.store.rows import dumps, last_at, summary_row
from cgraph.errors import SessionNotFound, StoreError
from cgraph.runtime.ports import SessionInfo, StoredSession
from cgraph.runtime.state.records import Event


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
        self._snapshots[info.id] = dumps(snapshot)
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
        text = dumps(snapshot)
        log.extend(events)
        self._snapshots[session_id] = text
        self._updated[session_id] = last_at(events, self._updated[session_id])
        if drop_checkpoints_after is not None:
            for key in [k for k in self._checkpoints if k[0] == session_id]:
                if key[1] > drop_checkpoints_after:
                    del self._checkpoints[key]
        if checkpoint is not None:
            self._checkpoints[(session_id, checkpoint)] = text

    def load(self, session_id: str) -> StoredSession:
        info = self._require(session_id)
        snapshot = json.loads(self._snapshots[session_id])
        info = summary_row(info, snapshot, self._updated[session_id])
        return StoredSession(info, snapshot, list(self._events[session_id]))

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

    def close(self) -> None:
        return None

    def _require(self, session_id: str) -> SessionInfo:
        info = self._info.get(session_id)
        if info is None:
            raise SessionNotFound(f"no session `{session_id}` in this store")
        return info
