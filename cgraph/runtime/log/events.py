"""The session's event log as a running session holds it: emit, commit, transcript.

Events are emitted into a buffer and written with the session's state in one transaction
by `commit`; a tool call's intent is written ahead at once (`write_ahead`), before the
call. A running session holds only what a turn reads: the events of its latest turn (as
they stand after undos, `reading.effective`) and the transcript from the history window
on (`Transcript`); the rest stays in the store, so a turn costs the same at turn 10,000 as
at turn 10. The transcript follows the log by one rule (`records.message_of`): each
message event carries its place in it (`msg`), which the store indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from cgraph.errors import SessionError
from cgraph.runtime.log import reading
from cgraph.runtime.log.transcript import Transcript
from cgraph.runtime.ports import AwaitedStore, Delivery, SessionStore, awaited
from cgraph.runtime.state.outcomes import Emit
from cgraph.runtime.state.records import Event, EventKind, message_of, trusted_event
from cgraph.runtime.state.snapshot import HistoryMarks, LogPosition, SessionState, stored

PAGE = 200
"""Events read back at a time when a session reads an earlier turn."""


class EventLog:
    """One session's events: what is committed, plus the step not yet committed."""

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        clock: Callable[[], float],
        events: list[Event],
        position: LogPosition,
        state: SessionState,
    ) -> None:
        self.store, self.session_id, self.clock = store, session_id, clock
        self.events = reading.effective(events)
        """The latest turn's events (from the snapshot's `turn_seq` on), undos folded."""
        # An intent written ahead of a tool call is in the store but not in the snapshot.
        self.seq = max(position.seq, self.events[-1].seq + 1 if self.events else 0)
        """The next event's sequence number (never rolled back, also not by undo)."""
        self.turn_seq = position.turn_seq
        """The `seq` where the latest turn begins (its user message)."""
        self.transcript = self._transcript(state.marks, position.messages)
        self._buffer: list[Event] = []
        self._deferred: tuple[SessionState, int, LogPosition] | None = None
        """A step committed with the next one (`defer`): its state, the events of the
        buffer it ends at, and the log's position then."""
        self._turn, self._tool_calls = -1, 0
        self._memories: list[Mapping[str, Any]] = []
        self._fold_turn()

    def _transcript(self, marks: HistoryMarks, messages: int) -> Transcript:
        """The conversation from the window's start on (older messages read back if asked).
        The window starts at the later of its two marks (as prompts read it): holding from
        the earlier one read a session's whole transcript at every resume, so opening a
        session cost more the longer it was."""
        first = min(max(marks.history_start, marks.context_start), messages)
        held = self._messages(first, messages)
        return Transcript(self._messages, held, first)

    def _messages(self, start: int, end: int) -> list[dict[str, str]]:
        if start >= end:  # none to read: a new session opens without asking the store
            return []
        found = self.store.message_events(self.session_id, start, end)
        return [m for m in map(message_of, found) if m is not None]

    def emit(self, kind: EventKind, turn: int, data: Mapping[str, Any]) -> Event:
        values = dict(data)
        event = trusted_event(self.seq, self.session_id, turn, kind, self.clock(), values)
        message = message_of(event)
        if message is not None:
            values["msg"] = len(self.transcript)  # its place: what the store indexes
            self.transcript.append(message)
        self.seq += 1
        self._buffer.append(event)
        if turn > self._turn:  # a new turn: the earlier one's events stay in the store
            self.events = []
        if kind == "user_message":
            self.turn_seq = event.seq
        self.events.append(event)
        self._count(event)
        return event

    def defer(self, state: SessionState) -> None:
        """A step whose commit goes with the next step's (one that only moves, see
        `cgraph.runtime.turn.engine`): its events stay in the buffer."""
        self._deferred = (state, len(self._buffer), self.position())

    def write_ahead(self, intent: Emit) -> None:
        """Write an event at once, before an irreversible call (a tool): a crash during the
        call leaves a record that it was attempted. It changes no state; the step's own
        events and the next state are committed after the call, as for any step. A step
        left to be committed with this one is committed first, as it stood."""
        if self._deferred is not None:
            state, ended, position = self._deferred
            self.store.commit(self.session_id, self._buffer[:ended], stored(state, position))
            self._buffer, self._deferred = self._buffer[ended:], None
        self.emit(intent.kind, self._turn, intent.data)
        self.store.append(self.session_id, self._buffer)
        self._buffer = []

    def position(self) -> LogPosition:
        return LogPosition(self.seq, len(self.transcript), self.turn_seq)

    def commit(
        self,
        state: SessionState,
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """Write the buffered events and the state with the log's position (and a turn's
        `deliveries` to the outbox), in one transaction."""
        snapshot = stored(state, self.position())
        self.store.commit(
            self.session_id,
            self._buffer,
            snapshot,
            checkpoint=checkpoint,
            rewind_to=rewind_to,
            deliveries=deliveries,
        )
        self._committed(state)

    @property
    def awaits(self) -> bool:
        """Whether its store's commits are awaited (`acommit`) by the async driver."""
        return awaited(self.store) is not None

    async def acommit(
        self,
        state: SessionState,
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """`commit`, awaited (a store that `awaits`)."""
        snapshot = stored(state, self.position())
        await cast(AwaitedStore, self.store).acommit(
            self.session_id,
            self._buffer,
            snapshot,
            checkpoint=checkpoint,
            rewind_to=rewind_to,
            deliveries=deliveries,
        )
        self._committed(state)

    def _committed(self, state: SessionState) -> None:
        self._buffer, self._deferred = [], None
        # What the window no longer shows is let go (the store still holds it).
        marks = state.marks
        self.transcript.forget_before(max(marks.history_start, marks.context_start))

    def checkpoint_before(self, turn: int) -> dict[str, Any]:
        """The snapshot committed at the end of the turn before `turn` (what undo restores)."""
        saved = self.store.checkpoint(self.session_id, turn - 1)
        if saved is None:
            session = self.session_id
            raise SessionError(f"no checkpoint before turn {turn} of session `{session}`")
        return saved

    def undo(
        self, turn: int, restored: SessionState, position: LogPosition, *, cancelled: bool
    ) -> None:
        """Append the `undo` of `turn`: that turn and later ones leave the log in effect,
        which is read back as it stood at the end of the turn before (`restored`, with its
        log's `position`)."""
        self.emit("undo", turn - 1, {"turn": turn, "cancelled": cancelled})
        since = self.store.events(self.session_id, after=position.turn_seq - 1)
        self.events = reading.effective([*since, *self._buffer])
        self.turn_seq = position.turn_seq
        self.transcript = self._transcript(restored.marks, position.messages)
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
        if self.events:
            self._turn = max(self._turn, max(e.turn for e in self.events))

    def _count(self, event: Event) -> None:
        if event.turn != self._turn:
            if event.turn < self._turn:  # an undo's own event: it belongs to no new turn
                return
            self._turn, self._memories, self._tool_calls = event.turn, [], 0
        if event.kind == "recall":
            self._memories.extend(event.data.get("memories", []))
        elif event.kind == "tool_call":
            # A started call's intent is not a second call.
            data = event.data
            self._tool_calls += data.get("by") == "model" and data.get("status") != "started"

    def turn_events(self, number: int, *, since: int | None = None) -> list[Event]:
        """The events of turn `number`: the latest turn's are held, an earlier one's read
        back (from `since`, the seq of its user message, when it is known)."""
        held = reading.turn_events(self.events, number)
        if held or number >= self._turn:
            return held
        if since is None:
            return reading.turn_events(
                reading.effective(self.store.events(self.session_id)), number
            )
        found: list[Event] = []
        after = since - 1
        while True:  # the turn's events follow its message; read them a page at a time
            page = self.store.events(self.session_id, after=after, limit=PAGE)
            found += [e for e in page if e.turn == number and e.kind != "undo"]
            ended = any(e.turn > number and e.kind == "user_message" for e in page)
            if ended or len(page) < PAGE:
                return found
            after = page[-1].seq
