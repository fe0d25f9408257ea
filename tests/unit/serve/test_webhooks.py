"""`--webhook` as written on the command line, the events a turn tells and the writes
that keep them, the signature."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.errors import ConfigError
from cgraph.serve.webhooks import EVENTS, Announce, destinations, events_of, signature
from cgraph.session import Session, Turn
from tests.serving import GRAPHS, SCRIPT


def test_a_destination_takes_its_events_secret_timeout_and_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK", "s3cret")
    (tmp_path / "secret").write_text("from-a-file\n")
    one, two = destinations(
        (
            "https://crm.example/h events=session.completed,guard.hit secret=env:HOOK timeout=2",
            f"http://127.0.0.1:9/h secret=file:{tmp_path / 'secret'} backoff=0.5",
        )
    )
    assert (one.events, one.secret, one.timeout) == (
        frozenset({"session.completed", "guard.hit"}),
        b"s3cret",
        2.0,
    )
    assert (two.events, two.secret, two.timeout, two.backoff) == (
        frozenset(EVENTS),
        b"from-a-file",
        5.0,
        0.5,
    )


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("crm.example/h secret=env:HOOK", "start with the URL (http:// or https://)"),
        ("http://h/x", "give secret=env:NAME or secret=file:PATH"),
        ("http://h/x secret=s3cret", "secret= takes env:NAME or file:PATH"),
        ("http://h/x secret=env:NOT_SET_ANYWHERE", "the variable NOT_SET_ANYWHERE is not set"),
        ("http://h/x events=turn.done secret=env:HOOK", "no event turn.done; events are"),
        ("http://h/x secret=env:HOOK timeout=soon", "timeout= takes seconds"),
        ("http://h/x secret=env:HOOK retries=3", "`retries=3` is not one of events=…"),
    ],
)
def test_a_wrong_destination_is_refused_saying_how_to_write_it(
    spec: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK", "s3cret")
    with pytest.raises(ConfigError) as refused:
        destinations((spec,))
    assert said in refused.value.message


def test_a_turn_tells_what_it_did() -> None:
    turn = Turn(
        session="s", number=3, user="bye", reply="Goodbye.", path=("a", "b", "a"),
        transitions=(), state="a", completed=True, guard="max_turns", fallback=True,
    )  # fmt: skip
    told = events_of(turn, "s")
    assert [(kind, extra) for kind, extra, _ in told] == [
        ("turn.committed", ""),
        ("state.entered", "0"),
        ("state.entered", "1"),
        ("state.entered", "2"),
        ("session.completed", ""),
        ("guard.hit", ""),
        ("fallback", ""),
    ]
    assert told[0][2] == turn.as_json()


def test_each_event_gets_one_delivery_per_destination_that_asks_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOK", "s3cret")
    sent_to = destinations(
        ("http://a/h secret=env:HOOK", "http://b/h events=session.completed secret=env:HOOK")
    )
    turn = Turn(
        session="s", number=1, user="bye", reply="ok", path=("a", "a"), transitions=(),
        state="a", completed=True,
    )  # fmt: skip
    made = Announce(sent_to).turned("g", "ann", turn, since=7)
    assert [(d.type, d.destination) for d in made] == [
        ("turn.committed", "http://a/h"),
        ("state.entered", "http://a/h"),
        ("state.entered", "http://a/h"),
        ("session.completed", "http://a/h"),
        ("session.completed", "http://b/h"),
    ]
    assert len({d.id for d in made}) == 5  # a state entered twice: two events
    assert len({d.event_id for d in made}) == 4  # one event, two destinations: one id
    again = Announce(sent_to).turned("g", "ann", turn, since=7)
    assert [d.id for d in again] == [d.id for d in made]  # the same turn: the same ids
    redone = Announce(sent_to).turned("g", "ann", turn, since=12)  # taken back, made again
    assert not {d.event_id for d in redone} & {d.event_id for d in made}
    body = json.loads(made[0].body)
    assert (body["graph"], body["session"], body["user"], body["turn"]) == ("g", "s", "ann", 1)
    assert body["id"] == made[0].event_id and made[0].owner == "ann"


def test_the_signature_is_an_hmac_of_the_time_and_the_body() -> None:
    mac = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature(b"k", 1_700_000_000, b"{}") == f"t=1700000000,v1={mac}"


class Recording(InMemorySessionStore):
    """An in-memory store that notes which writes carried deliveries."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[tuple[str, int | None, list[str]]] = []

    def create(self, info: Any, snapshot: Any, events: Any, **where: Any) -> None:
        self.written.append(("create", None, [d.type for d in where.get("deliveries", ())]))
        super().create(info, snapshot, events, **where)

    def commit(self, session_id: str, events: Any, snapshot: Any, **where: Any) -> None:
        told = [d.type for d in where.get("deliveries", ())]
        self.written.append(("commit", where.get("checkpoint"), told))
        super().commit(session_id, events, snapshot, **where)


def test_the_deliveries_are_written_by_the_writes_that_keep_what_they_tell_of(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOOK", "s3cret")
    store = Recording()
    announce = Announce(destinations(("http://a/h secret=env:HOOK",)))
    session = Session.start(
        GRAPHS / "talk.yaml", model=f"scripted:{SCRIPT}", store=store, announce=announce
    )
    session.send("hi")
    session.send("again")
    told = [w for w in store.written if w[2]]
    assert told == [
        ("create", None, ["session.started"]),
        ("commit", 1, ["turn.committed", "state.entered"]),  # the turn's last step
        ("commit", 2, ["turn.committed", "state.entered"]),
    ]
    outbox = store.outbox()
    assert [d.type for d in outbox.claim(time.time(), 60, 10)] == [t for *_, k in told for t in k]
