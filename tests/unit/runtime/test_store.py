"""Session stores: atomic steps, checkpoints, listing, and small writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import SessionNotFound, StoreError
from cgraph.runtime.ports import SessionInfo, SessionStore
from cgraph.runtime.state.records import Event
from cgraph.session import Session
from cgraph.wiring.stores import open_store
from tests.unit.runtime._runtime import action, graph, simple, stay


def event(seq: int, turn: int = 1, kind: str = "user_message") -> Event:
    return Event.model_validate(
        {
            "seq": seq,
            "session": "s",
            "turn": turn,
            "kind": kind,
            "at": float(seq),
            "data": {"text": f"m{seq}"},
        }
    )


def stores(tmp_path: Path) -> list[SessionStore]:
    return [InMemorySessionStore(), SQLiteStore(tmp_path / "x.sqlite")]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_create_commit_load_and_checkpoints(tmp_path: Path, kind: str) -> None:
    store = stores(tmp_path)[kind == "sqlite"]
    info = SessionInfo("s", "ann", "/g.yaml", "g", "scripted", created_at=1.0)
    store.create(
        info, {"stack": [{"graph": "", "state": "a"}], "turn": 0}, [event(0, 0, "session_started")]
    )
    store.commit(
        "s", [event(1), event(2)], {"stack": [{"graph": "", "state": "b"}], "turn": 1}, checkpoint=1
    )
    loaded = store.load("s")
    assert [e.seq for e in loaded.events] == [0, 1, 2] and loaded.events[1].data == {"text": "m1"}
    assert loaded.snapshot["turn"] == 1 and loaded.info.state == "b" and loaded.info.turn == 1
    assert store.checkpoint("s", 0) == {"stack": [{"graph": "", "state": "a"}], "turn": 0}
    assert store.checkpoint("s", 1)["turn"] == 1  # type: ignore[index]
    store.commit(
        "s",
        [event(3)],
        {"stack": [{"graph": "", "state": "a"}], "turn": 0},
        rewind_to=0,
    )
    assert store.checkpoint("s", 1) is None
    with pytest.raises(StoreError):
        store.commit("s", [event(3)], {"stack": [], "turn": 0})  # seq 3 already committed
    with pytest.raises(SessionNotFound):
        store.load("nope")
    with pytest.raises(StoreError):
        store.create(info, {}, [])
    assert [i.id for i in store.sessions("ann")] == ["s"] and store.sessions("bob") == []


def test_a_failed_commit_writes_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "x.sqlite")
    store.create(SessionInfo("s", "u", "", "g", "m", 1.0), {"turn": 0, "stack": []}, [])
    store.commit("s", [event(1)], {"turn": 1, "stack": []})
    with pytest.raises(StoreError):
        store.commit("s", [event(2), event(1)], {"turn": 9, "stack": []})
    loaded = store.load("s")
    assert [e.seq for e in loaded.events] == [1] and loaded.snapshot["turn"] == 1


def test_sqlite_uses_wal_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    SQLiteStore(path).create(SessionInfo("s", "u", "", "g", "m", 1.0), {"turn": 0, "stack": []}, [])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert SQLiteStore(path).load("s").info.user_id == "u"


def test_open_store_forms(tmp_path: Path) -> None:
    assert isinstance(open_store(None), InMemorySessionStore)
    assert open_store(tmp_path / "f").path == tmp_path / "f" / "sessions.sqlite"  # type: ignore[attr-defined]
    assert open_store(tmp_path / "a.sqlite").path == tmp_path / "a.sqlite"  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="must be a folder"):
        open_store(42)


def test_an_unusable_store_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the session store folder"):
        open_store(blocker)
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(StoreError, match="cannot open session store"):
        open_store(tmp_path / "dir.sqlite")


def test_bytes_per_step_stay_small_and_snapshots_hold_no_transcript(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"END": "bye"})))
    store = SQLiteStore(tmp_path / "s.sqlite")
    session = Session.start(
        spec, model=ScriptedModel({"a": stay("a reply of some length")}), store=store
    )
    for number in range(200):
        session.send(f"user message number {number}")
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        snapshot = db.execute("SELECT snapshot FROM sessions").fetchone()[0]
        event_bytes = db.execute("SELECT sum(length(data)) FROM events").fetchone()[0]
        checkpoints = db.execute("SELECT max(length(snapshot)) FROM checkpoints").fetchone()[0]
    assert "user message number" not in snapshot and len(snapshot) < 1000
    assert checkpoints < 1000 and event_bytes / 200 < 2000
