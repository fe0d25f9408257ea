"""Sessions stored by the previous release resume: the store's tables and the snapshots
are brought to this version, and nothing the sessions said or did is lost."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import StoreError
from cgraph.runtime.ports import SessionInfo
from cgraph.runtime.state.records import trusted_event
from cgraph.session import Session
from tests.conftest import FIXTURES

STORES = FIXTURES / "stores"
GRAPH = STORES / "graph.yaml"


def answer(exit_id: str, reply: str = "", size: int | None = None) -> dict[str, object]:
    return {"exit": exit_id, "reason": "scripted", "reply": reply, "slots": {"size": size}}


def model(*answers: dict[str, object]) -> ScriptedModel:
    chat = ScriptedModel({"ask": list(answers)})
    chat.calls_tools = False  # type: ignore[attr-defined]
    return chat


@pytest.fixture
def store(tmp_path: Path) -> Path:
    copy = tmp_path / "sessions.sqlite"
    shutil.copy(STORES / "release_0_1.sqlite", copy)
    return copy


def test_a_session_of_the_last_release_resumes_with_its_transcript_keys_and_turns(
    store: Path,
) -> None:
    chat = model(answer("noted", size=7), answer("stay", "Seven, then."))
    session = Session.resume("kept", store=store, graph=GRAPH, model=chat)
    said = [m["content"] for m in session.transcript]
    assert said == [
        "hi",
        "How many people are coming?",
        "we are 4",
        "Noted: 4. Four, then.",
        "make it 6",
        "Noted: 6. Six, then.",
    ]
    assert session.view.turn_number == 3 and session.variables["size"] == 6
    found = {key: session.log.with_key(key) for key in ("k1", "k2", "k3")}
    assert found["k1"] is not None and found["k1"].number == 2
    assert found["k2"] is None  # its turn was undone: the key may be sent again
    assert found["k3"] is not None and found["k3"].reply == "Noted: 6. Six, then."
    turn = session.send("seven now", key="k4")
    assert turn.number == 4 and turn.reply == "Noted: 7. Seven, then."
    # The note about tools the model does not call was given in turn 1: not again.
    assert turn.warnings == ()
    assert [t.number for t in session.turns()] == [1, 2, 3, 4]
    with sqlite3.connect(store) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 4


def test_an_undo_reaches_back_to_a_checkpoint_the_last_release_wrote(store: Path) -> None:
    session = Session.resume("kept", store=store, graph=GRAPH, model=model())
    session.undo()
    session.undo()
    assert session.view.turn_number == 1
    assert [m["content"] for m in session.transcript] == ["hi", "How many people are coming?"]
    again = Session.resume("kept", store=store, graph=GRAPH, model=model(answer("stay", "Hm?")))
    assert again.send("hello again").reply == "Hm?" and again.view.turn_number == 2


def test_a_turn_the_last_release_left_unfinished_is_finished_on_resume(store: Path) -> None:
    chat = model(answer("stay", "Three, then."))
    session = Session.resume("cut", store=store, graph=GRAPH, model=chat)
    assert session.recovered is not None
    assert session.recovered.reply == "Noted: 3. Three, then."
    assert session.log.with_key("c2") == session.recovered
    assert [m["content"] for m in session.transcript][-2:] == [
        "three of us",
        session.recovered.reply,
    ]


def test_a_store_written_by_a_later_cgraph_is_refused_not_misread(store: Path) -> None:
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA user_version=99")
    with pytest.raises(StoreError, match="layout version 99, newer than this cgraph's 4"):
        SQLiteStore(store)


def test_a_store_of_layout_3_is_brought_to_this_layout_with_its_sessions(tmp_path: Path) -> None:
    """A store written with message places already (layouts 2 and 3) gains only what it
    lacks: its events keep their places and its keys stay in effect."""
    path = tmp_path / "layout_3.sqlite"
    store = SQLiteStore(path)
    info = SessionInfo("s", "ann", "/g.yaml", "g", "scripted", created_at=1.0)
    said = {"text": "hi", "state": "ask", "key": "k1", "msg": 0}
    store.create(info, {"turn": 1}, [trusted_event(0, "s", 1, "user_message", 1.0, said)])
    store.close()
    with sqlite3.connect(path) as db:  # as the release before the outbox left it
        db.execute("DROP TABLE cgraph_webhook_deliveries")
        db.execute("PRAGMA user_version=3")
    again = SQLiteStore(path)
    assert [e.data["text"] for e in again.message_events("s", 0, 1)] == ["hi"]
    assert again.turn_of_key("s", "k1") == (1, 0)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 4
