"""A session's log as a front end reads it: its turns, events, audit and keyed turns.

Everything here is read from the log (the engine's, or the store's for what the engine
does not keep), never from the session's state; `Session.log` is one of these.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgraph.runtime.log import reading as log
from cgraph.runtime.ports import SessionInfo, SessionStore, Standing
from cgraph.runtime.state.records import Decision, Event, TransitionRecord, Turn
from cgraph.runtime.turn.engine import Engine


@dataclass(frozen=True, slots=True)
class Recheck:
    """What `SessionLog.recheck` found: whether the session kept open is still the stored
    one, and the turn already made for the key asked about, if any."""

    current: bool
    keyed: Turn | None = None


class SessionLog:
    """The turns and events of one open session (undone turns left out unless said)."""

    def __init__(self, info: SessionInfo, engine: Engine, store: SessionStore) -> None:
        self.info, self._engine, self._store = info, engine, store

    @property
    def _turn(self) -> int:
        return self._engine.state.turn

    def turn(self, number: int) -> Turn:
        """Turn `number` (still in effect) as the log has it."""
        return log.build_turn(self.info.id, number, self._engine.log.turn_events(number))

    def last_turn(self) -> Turn | None:
        """The latest turn still in effect, or None before the first message."""
        return self.turn(self._turn) if self._turn else None

    def turns(self) -> list[Turn]:
        """Every turn still in effect (undone turns left out), oldest first."""
        events = log.effective(self.events())
        numbers = range(1, self._turn + 1)
        return [log.build_turn(self.info.id, n, log.turn_events(events, n)) for n in numbers]

    def turn_events(self, number: int | None = None) -> list[Event]:
        """The events of a turn still in effect (the latest by default)."""
        return self._engine.log.turn_events(self._turn if number is None else number)

    def events(self, *, after: int = -1, limit: int | None = None) -> list[Event]:
        """The append-only event log, undone turns included (each undo is an event too):
        the events whose `seq` is above `after`, at most `limit` of them."""
        return self._store.events(self.info.id, after=after, limit=limit)

    def audit(self) -> list[TransitionRecord]:
        """Every transition still in effect, oldest first (read from the store)."""
        return log.audit(log.effective(self.events()))

    def decisions(self) -> list[Decision]:
        """The choices made during the latest turn, by the model or the engine."""
        return log.decisions(self.turn_events())

    def with_key(self, key: str) -> Turn | None:
        """The turn still in effect whose message was sent with this `key`, if any (the
        store indexes keys: a lookup does not read the log)."""
        found = self._store.turn_of_key(self.info.id, str(key))
        if found is None:
            return None
        turn, seq = found
        return log.build_turn(self.info.id, turn, self._engine.log.turn_events(turn, since=seq))

    def is_current(self) -> bool:
        """Whether the store still holds the step this session last committed (or read):
        False once another process wrote to it since. A front end that keeps sessions open
        between requests checks it, under the session's lock (`SessionStore.hold`), before
        using one again; a stale one is opened anew with `Sessions.resume`."""
        return self.recheck().current

    def recheck(self, key: str | None = None, stood: Standing | None = None) -> Recheck:
        """`is_current`, and when it is and `key` is given, `with_key(key)`, from one read
        of the store that decodes neither the log nor the last turn
        (`SessionStore.standing`): what a front end asks at every request to a session it
        kept open. `stood` is that read when it was made already, with the session's
        lease (`Lease.standing`, asked with the same `key`)."""
        if stood is None:
            stood = self._store.standing(self.info.id, None if key is None else str(key))
        same = stood.created_at == self.info.created_at  # not a new one of that id
        if not (same and stood.seq == self._engine.log.position().seq):
            return Recheck(current=False)
        if stood.keyed is None:
            return Recheck(current=True)
        turn, seq = stood.keyed
        events = self._engine.log.turn_events(turn, since=seq)
        return Recheck(current=True, keyed=log.build_turn(self.info.id, turn, events))
