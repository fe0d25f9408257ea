"""The event log: emitted events are committed with the snapshot; an undo folds the log."""

from __future__ import annotations

import pytest

from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.errors import SessionError
from cgraph.runtime.log.events import EventLog
from cgraph.runtime.log.reading import recalled
from cgraph.runtime.ports import SessionInfo
from cgraph.runtime.state.records import Decision, Event, trusted, trusted_event
from cgraph.runtime.state.snapshot import Frame, LogPosition, SessionState, stored


def opened() -> tuple[EventLog, InMemorySessionStore, SessionState]:
    store = InMemorySessionStore()
    state = SessionState(stack=(Frame("", "a"),))
    info = SessionInfo(id="s1", user_id="ann", graph="", graph_name="g", model="", created_at=0.0)
    store.create(info, stored(state, LogPosition()), [])
    return EventLog(store, "s1", lambda: 1.0, [], LogPosition(), state), store, state


def test_the_transcript_follows_the_events_and_nothing_is_stored_before_commit() -> None:
    log, store, snap = opened()
    log.emit("user_message", 1, {"text": "hi", "state": "a"})
    log.emit("decision", 1, {"state": "a"})
    log.emit("reply", 1, {"text": "hello", "state": "a"})
    log.emit("reply", 1, {"text": "", "state": "END"})  # nothing said: no message
    assert list(log.transcript) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    assert store.events("s1") == []
    log.commit(snap, checkpoint=1)
    assert [e.seq for e in store.events("s1")] == [0, 1, 2, 3]
    assert store.load("s1").snapshot["seq"] == 4 == log.seq
    # Each message is stored with its place in the transcript, which the store indexes.
    assert [e.data.get("msg") for e in store.events("s1")] == [0, None, 1, None]
    assert [e.data["text"] for e in store.message_events("s1", 0, 2)] == ["hi", "hello"]


def test_an_undo_drops_the_turn_from_log_and_transcript_but_never_reuses_a_seq() -> None:
    log, store, snap = opened()
    for turn, text in ((1, "first"), (2, "second")):
        log.emit("user_message", turn, {"text": text})
        log.emit("reply", turn, {"text": f"re {text}"})
    first_turn = SessionState(stack=(Frame("", "a"),), turn=1)
    log.commit(snap)
    log.undo(2, first_turn, LogPosition(seq=2, messages=2, turn_seq=0), cancelled=False)
    assert [m["content"] for m in log.transcript] == ["first", "re first"]
    assert [e.kind for e in log.events] == ["user_message", "reply", "undo"]
    log.commit(first_turn, rewind_to=1)
    assert [e.seq for e in store.events("s1")] == [0, 1, 2, 3, 4]
    assert log.emit("user_message", 2, {"text": "again"}).seq == 5
    # The place the undone turn's message had is taken again by the next one.
    log.commit(first_turn)
    assert [e.data["text"] for e in store.message_events("s1", 0, 3)] == [
        "first",
        "re first",
        "again",
    ]


def test_an_undo_restores_the_checkpoint_before_its_turn_and_a_missing_one_is_named() -> None:
    log, _, _ = opened()
    log.commit(SessionState(stack=(Frame("", "b"),)), checkpoint=1)
    assert log.checkpoint_before(1)["stack"][0]["state"] == "a"  # as the session started
    assert log.checkpoint_before(2)["stack"][0]["state"] == "b"
    with pytest.raises(SessionError, match="no checkpoint before turn 3 of session `s1`"):
        log.checkpoint_before(3)


def test_a_memory_recalled_twice_in_a_turn_is_listed_once_with_its_best_score() -> None:
    def recall(seq: int, *scores: tuple[str, float]) -> Event:
        memories = [{"id": i, "text": f"t{i}", "tier": "facts", "score": s} for i, s in scores]
        return Event(
            seq=seq, session="s", turn=1, kind="recall", at=0.0, data={"memories": memories}
        )

    found = recalled([recall(1, ("a", 0.5), ("b", 0.4)), recall(2, ("a", 0.9), ("c", 0.3))])
    assert [(m.id, m.score) for m in found] == [("a", 0.9), ("b", 0.4), ("c", 0.3)]


def test_an_event_built_unvalidated_is_the_validated_model() -> None:
    data = {"text": "hi", "state": "a"}
    built = trusted_event(3, "s1", 2, "user_message", 1.5, data)
    valid = Event(seq=3, session="s1", turn=2, kind="user_message", at=1.5, data=data)
    assert built == valid and built.model_dump() == valid.model_dump()
    assert built.model_fields_set == valid.model_fields_set
    assert built.model_copy(update={"turn": 4}).turn == 4


def test_the_turn_so_far_follows_emits_undo_and_reopening() -> None:
    log, store, snap = opened()
    found = {"id": "m1", "text": "likes tea", "tier": "facts", "score": 0.9}
    log.emit("user_message", 1, {"text": "hi"})
    log.emit("recall", 1, {"memories": [found]})
    log.emit("tool_call", 1, {"by": "model", "status": "started"})  # an intent: not a call
    log.emit("tool_call", 1, {"by": "model", "status": "done"})
    log.emit("tool_call", 1, {"status": "done"})  # a side-effect state's tool
    assert log.turn_so_far(1) == ((found,), 1)
    log.commit(snap)
    reopened = EventLog(store, "s1", lambda: 1.0, store.load("s1").events, log.position(), snap)
    assert reopened.turn_so_far(1) == ((found,), 1)
    log.emit("user_message", 2, {"text": "again"})
    assert log.turn_so_far(2) == ((), 0) and log.turn_so_far(1) == ((), 0)
    log.emit("recall", 2, {"memories": [found, found]})
    log.undo(2, snap, log.position(), cancelled=False)
    assert log.turn_so_far(2) == ((), 0)


def test_a_decision_built_unvalidated_is_the_validated_model() -> None:
    values = dict(state="a", kind="decision", chosen="b", reason="r", candidates=("b",))
    values |= dict(scores={}, prompt_hash="h", model="m", attempts=1, fallback=False)
    values |= dict(window=2, summary=False, why={"kind": "model"})
    built = trusted(Decision, **values)
    valid = Decision(**values)  # type: ignore[arg-type]
    assert built == valid and built.model_dump() == valid.model_dump()
    assert built.model_fields_set == valid.model_fields_set
