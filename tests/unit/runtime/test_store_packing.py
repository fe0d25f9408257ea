"""How a database store packs the log and snapshots (`packing`), and PostgreSQL's rows: a
turn's steps folded into one row at its end, a layout of the last release read and
migrated, and what another process wrote never folded away."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.store import packing
from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.errors import StoreError
from cgraph.runtime.ports import SessionInfo
from cgraph.runtime.state.records import Event
from cgraph.session import Session
from cgraph.spec.load import load_graph

FLOW = Path(__file__).resolve().parents[3] / "bench" / "data" / "flow_served.yaml"


class Recording(InMemorySessionStore):
    """An in-memory store that keeps each step's events and snapshot as committed."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple[list[Event], dict[str, Any], int | None]] = []

    def commit(self, session_id: str, events: Any, snapshot: Any, **where: Any) -> None:
        self.steps.append((list(events), snapshot, where.get("checkpoint")))
        super().commit(session_id, events, snapshot, **where)


def served_turns(turns: int) -> tuple[list[list[Event]], dict[str, Any]]:
    """Turns of bench_serve's flow (6 steps, 3 model calls), each as its events, and the
    last snapshot."""
    model = ScriptedModel(
        {
            "respond": [
                {"exit": "receive", "reason": "new input", "reply": ""},
                {"exit": "stay", "reason": "answered", "reply": "Here is my answer."},
            ]
            * (turns + 1),
            "decide": {"exit": "reason", "reason": "by the input"},
        }
    )
    store = Recording()
    session = Session.start(load_graph(FLOW), model=model, store=store, memory=None)
    for number in range(turns):
        session.send(f"statement number {number}", key=f"{session.id}-{number}")
    found, turn = [], []
    for events, _, checkpoint in store.steps:
        turn += events
        if checkpoint is not None:
            found.append(turn)
            turn = []
    return found[1:], store.steps[-1][1]  # the first turn enters the graph


def test_events_and_snapshots_read_back_as_written() -> None:
    turns, snapshot = served_turns(3)
    for events in turns:
        back = packing.unpack_events("s", packing.pack_events(events))
        assert [e.model_dump(mode="json") for e in back] == [
            {**e.model_dump(mode="json"), "session": "s"} for e in events
        ]
    assert packing.unpack(packing.pack(snapshot)) == json.loads(json.dumps(snapshot))
    odd = {"text": 'ünïcode \u2028 "quoted"', "n": 1.5e-7, "big": 2**60, "none": None}
    assert packing.unpack(packing.pack(odd)) == odd


def test_a_turn_of_six_steps_packs_to_under_a_kilobyte() -> None:
    """The encoding's own share of the ≤ 2 KB a turn may take in PostgreSQL: a turn's 18
    events (about 2.7 KB of JSON) and the snapshot, packed. A property of the format, not
    of a timing."""
    turns, snapshot = served_turns(5)
    for events in turns:
        plain = len(packing.events_text(events))
        packed = len(packing.pack_events(events))
        assert len(events) == 18 and plain > 2400 and packed < 800
    assert len(packing.pack(snapshot)) < 160


def test_steps_fold_into_the_turn_they_belong_to() -> None:
    turns, _ = served_turns(2)
    steps = [packing.events_text(turns[0][:5]), packing.events_text(turns[0][5:])]
    folded = packing.deflated(packing.joined(steps))
    assert packing.unpack_events("s", folded) == packing.unpack_events(
        "s", packing.pack_events(turns[0])
    )
    assert packing.joined(["[]", steps[0]]) == steps[0]


def test_plain_json_of_an_earlier_layout_is_read_and_a_later_format_refused() -> None:
    plain = b'[[4,1,"user_message",1.25,{"text":"hi","msg":0}]]'
    (event,) = packing.unpack_events("s", plain)
    assert (event.seq, event.turn, event.kind, event.at, event.data["text"]) == (
        4,
        1,
        "user_message",
        1.25,
        "hi",
    )
    assert packing.unpack(b'{"turn":2}') == {"turn": 2}
    with pytest.raises(ValueError, match="unknown format 9"):
        packing.unpack(b"\x09abc")
    with pytest.raises(ValueError, match="in one step"):
        packing.events_text([_event(2, 1, "note"), _event(1, 1, "note")])


def test_the_dictionary_of_format_1_never_changes() -> None:
    """Every stored value of format 1 needs this dictionary to be read: another dictionary
    is another format byte."""
    digest = hashlib.sha256(packing.DICTIONARY).hexdigest()[:16]
    assert (packing.FORMAT, len(packing.DICTIONARY), digest) == PINNED


PINNED = (1, 1663, "832e57101d2cd587")


# ----- PostgreSQL's rows ----------------------------------------------------------------


def _event(seq: int, turn: int, kind: Any, **data: Any) -> Event:
    return Event(seq=seq, session="s", turn=turn, kind=kind, at=100.0 + seq, data=data)


def _rows(url: str) -> list[tuple[int, bytes]]:
    with psycopg.connect(url) as conn:
        return [(r[0], bytes(r[1])) for r in conn.execute("SELECT seq, data FROM cgraph_log")]


@pytest.mark.slow
def test_a_turns_steps_become_one_row_when_it_ends(pg_url: str) -> None:
    from cgraph.backends.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    info = SessionInfo("s", "ann", "/g.yaml", "g", "m", created_at=1.0)
    store.create(info, {"stack": [], "turn": 0}, [_event(0, 0, "session_started")])
    said = _event(1, 1, "user_message", text="hi", msg=0, key="k1")
    store.commit("s", [said], {"stack": [], "turn": 1, "turn_seq": 1})
    store.commit("s", [_event(2, 1, "note", text="a"), _event(3, 1, "note", text="b")], {})
    assert len(_rows(pg_url)) == 3 and _rows(pg_url)[-1][1].startswith(b"[")  # plain, for now
    store.append("s", [_event(4, 1, "tool_call", status="started")])
    reply = _event(5, 1, "reply", text="hello", msg=1)
    store.commit("s", [reply], {"turn": 1, "turn_seq": 1}, checkpoint=1)
    rows = _rows(pg_url)
    assert [seq for seq, _ in rows] == [0, 5] and rows[1][1][0] == packing.FORMAT
    assert [e.seq for e in store.events("s")] == list(range(6))
    assert [e.seq for e in store.events("s", after=2, limit=2)] == [3, 4]
    assert [e.seq for e in store.load("s").events] == [1, 2, 3, 4, 5]
    assert [e.data["text"] for e in store.message_events("s", 0, 2)] == ["hi", "hello"]
    assert [e.data["text"] for e in store.message_events("s", 1, 2)] == ["hello"]
    assert store.turn_of_key("s", "k1") == (1, 1)
    with pytest.raises(StoreError, match="already committed"):
        store.commit("s", [reply], {"turn": 1}, checkpoint=1)
    store.close()


@pytest.mark.slow
def test_what_another_process_wrote_in_a_turn_is_kept_as_it_is(pg_url: str) -> None:
    from cgraph.backends.store.postgres import PostgresStore

    one, two = PostgresStore(pg_url), PostgresStore(pg_url)
    info = SessionInfo("s", "ann", "/g.yaml", "g", "m", created_at=1.0)
    one.create(info, {"stack": [], "turn": 0}, [_event(0, 0, "session_started")])
    one.commit("s", [_event(1, 1, "user_message", text="hi", msg=0)], {"turn_seq": 1})
    one.commit("s", [_event(2, 1, "note", text="a")], {"turn_seq": 1})
    two.commit("s", [_event(3, 1, "note", text="b")], {"turn_seq": 1})  # one died, say
    one.commit("s", [_event(4, 1, "note", text="c")], {"turn_seq": 1})
    one.commit("s", [_event(5, 1, "reply", text="ok", msg=1)], {"turn_seq": 1}, checkpoint=1)
    assert [seq for seq, _ in _rows(pg_url)] == [0, 1, 2, 3, 5]  # only 4 and 5 were one run
    assert [e.seq for e in one.events("s")] == list(range(6))
    assert [e.data["text"] for e in two.message_events("s", 0, 2)] == ["hi", "ok"]
    one.close()
    two.close()


@pytest.mark.slow
def test_a_store_of_layout_1_is_migrated_and_reads_as_before(pg_url: str) -> None:
    from cgraph.backends.store.postgres import MIGRATIONS, SCHEMA_VERSION, PostgresStore, migrate

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE cgraph_schema (version int NOT NULL)")
        conn.execute("INSERT INTO cgraph_schema VALUES (1)")
        for statement in MIGRATIONS[0].split(";"):
            if statement.strip():
                conn.execute(statement)
        snapshot = json.dumps({"stack": [{"graph": "", "state": "a"}], "turn": 1, "turn_seq": 1})
        conn.execute(
            "INSERT INTO cgraph_sessions (id, user_id, graph, graph_name, model, created_at,"
            " updated_at, turn_seq, snapshot) VALUES ('s','ann','/g.yaml','g','m',1,2,1,%s)",
            (snapshot,),
        )
        rows = [
            (0, 0, 0.5, None, "session_started", "{}"),
            (1, 1, 1.25, 0, "user_message", '{"text":"hi","key":"k1","msg":0}'),
            (2, 1, 1.5, 1, "reply", '{"text":"hello","msg":1}'),
        ]
        for seq, turn, at, msg, kind, data in rows:
            conn.execute(
                "INSERT INTO cgraph_events (sid, seq, turn, at, msg, kind, data)"
                " VALUES (1, %s, %s, %s, %s, %s, %s)",
                (seq, turn, at, msg, kind, data),
            )
        conn.execute("INSERT INTO cgraph_checkpoints VALUES (1, 1, %s)", (snapshot,))
        conn.execute("INSERT INTO cgraph_keys VALUES (1, 1, 1, 'k1')")
    assert migrate(pg_url) == (1, SCHEMA_VERSION)
    store = PostgresStore(pg_url)
    loaded = store.load("s")
    assert loaded.snapshot["turn"] == 1 and [e.seq for e in loaded.events] == [1, 2]
    assert [(e.at, e.kind) for e in store.events("s")][1] == (1.25, "user_message")
    assert [e.data["text"] for e in store.message_events("s", 0, 2)] == ["hi", "hello"]
    assert store.checkpoint("s", 1) == json.loads(snapshot)
    assert store.turn_of_key("s", "k1") == (1, 1)
    store.commit("s", [_event(3, 2, "user_message", text="again", msg=2)], {"turn": 2})
    assert [e.seq for e in store.events("s", after=1)] == [2, 3]
    store.close()
