"""`--webhook` as written on the command line, the events a turn tells, the signature."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from cgraph.errors import ConfigError
from cgraph.serve.webhooks import EVENTS, destinations, events_of, signature
from cgraph.session import Turn


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
        session="s", number=3, user="bye", reply="Goodbye.", path=("a", "b"), transitions=(),
        state="b", completed=True, guard="max_turns", fallback=True,
    )  # fmt: skip
    told = [kind for kind, _ in events_of(turn)]
    assert told == [
        "turn.committed",
        "state.entered",
        "state.entered",
        "session.completed",
        "guard.hit",
        "fallback",
    ]
    assert events_of(turn)[0][1] == turn.as_json()


def test_the_signature_is_an_hmac_of_the_time_and_the_body() -> None:
    mac = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert signature(b"k", 1_700_000_000, b"{}") == f"t=1700000000,v1={mac}"
