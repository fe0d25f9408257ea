"""The session's event log as a running session holds it: emit, record, commit, transcript.

Events are emitted into a buffer and written with the snapshot in one transaction by
`commit`. The log held here is the *effective* one (`log_view.effective`: undone turns
left out), and the transcript is derived from it by one rule (`log_view.message_of`),
kept in step as events are emitted and recomputed only when an undo rewrites the log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cgraph.errors import SessionError
from cgraph.runtime.log import reading as log_view
from cgraph.runtime.ports import SessionStore
from cgraph.runtime.state.outcomes import Effects, apply_effects
from cgraph.runtime.state.records import Event, EventKind, trusted_event
from cgraph.runtime.state.snapshot import Snapshot, here


class EventLog:
    """One session's events: what is committed, plus the step not yet committed."""

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        clock: Callable[[], float],
        events: list[Event],
        seq: int,
    ) -> None:
        self.store, self.session_id, self.clock = store, session_id, clock
        self.events = log_view.effective(events)
        self.transcript = log_view.transcript(self.events)
        """Chat messages, in order; the list is only ever changed in place."""
        self.seq = seq
        """The next event's sequence number (never rolled back, also not by undo)."""
        self._buffer: list[Event] = []
        self._turn, self._tool_calls = -1, 0
        self._memories: list[Mapping[str, Any]] = []
        self._fold_turn()

    def emit(self, kind: EventKind, turn: int, data: Mapping[str, Any]) -> Event:
        event = trusted_event(self.seq, self.session_id, turn, kind, self.clock(), dict(data))
        self.seq += 1
        self._buffer.append(event)
        self.events.append(event)
        self._count(event)
        message = log_view.message_of(event)
        if message is not None:
            self.transcript.append(message)
        return event

    def record(self, snap: Snapshot, effects: Effects) -> None:
        """Apply a step's effects to the snapshot and emit what the log keeps of them."""
        if not effects:  # most calls: no summary, no context strategy
            return
        for event in apply_effects(snap, effects, here(snap)):
            self.emit(event.kind, snap.turn, event.data)

    def commit(
        self,
        snapshot: Snapshot,
        *,
        checkpoint: int | None = None,
        drop_checkpoints_after: int | None = None,
    ) -> None:
        """Write the buffered events and the snapshot, in one transaction."""
        snapshot.seq = self.seq
        self.store.commit(
            self.session_id,
            self._buffer,
            snapshot.to_dict(),
            checkpoint=checkpoint,
            drop_checkpoints_after=drop_checkpoints_after,
        )
        self._buffer = []

    def checkpoint_before(self, turn: int) -> Snapshot:
        """The snapshot committed at the end of the turn before `turn` (what undo restores)."""
        saved = self.store.checkpoint(self.session_id, turn - 1)
        if saved is None:
            session = self.session_id
            raise SessionError(f"no checkpoint before turn {turn} of session `{session}`")
        return Snapshot.from_dict(saved)

    def undo(self, turn: int, *, cancelled: bool) -> None:
        """Append the `undo` of `turn` and fold it: that turn and later ones leave the log."""
        self.emit("undo", turn - 1, {"turn": turn, "cancelled": cancelled})
        self.events[:] = log_view.effective(self.events)
        self.transcript[:] = log_view.transcript(self.events)
        self._fold_turn()

    def turn_so_far(self, turn: int) -> tuple[tuple[Mapping[str, Any], ...], int]:
        """What turn `turn` has recalled (oldest recall first) and how many tool calls the
        model made in it, kept as events are emitted rather than searched for every step."""
        if turn != self._turn:
            return (), 0
        return tuple(self._memories), self._tool_calls

    def _fold_turn(self) -> None:
        """The running figures of the latest turn, from the log (on loading and undo)."""
        self._turn, self._memories, self._tool_calls = -1, [], 0
        latest = self.events[-1].turn if self.events else -1
        start = len(self.events)
        while start and self.events[start - 1].turn == latest:
            start -= 1
        for event in self.events[start:]:
            self._count(event)

    def _count(self, event: Event) -> None:
        if event.turn != self._turn:
            self._turn, self._memories, self._tool_calls = event.turn, [], 0
        if event.kind == "recall":
            self._memories.extend(event.data.get("memories", []))
        elif event.kind == "tool_call":
            # A started call's intent is not a second call.
            data = event.data
            self._tool_calls += data.get("by") == "model" and data.get("status") != "started"

    def turn_events(self, number: int) -> list[Event]:
        return log_view.turn_events(self.events, number)
