"""Webhooks from a real `cgraph serve` to a real receiver process that fails, times out and
restarts, while the server itself is killed and started again: every event arrives, signed,
at least once under its one id, and no turn waits for any of it; a server killed with -9
the moment it replied still sends every event of that turn, and none of a turn it never
committed. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.commands import environment
from tests.conftest import ROOT
from tests.serving import GRAPHS, SCRIPT, Server, free_port, start

pytestmark = pytest.mark.slow  # real server and receiver processes

RECEIVER = ROOT / "tests" / "servers" / "webhook_receiver.py"
SECRET = "whsec-0123456789abcdef"
EVENTS = "session.started,turn.committed,session.completed"
HOOK_SECONDS = 2.0
"""How long a delivery waits for the receiver's answer."""


class Receiver:
    """The receiver process on a fixed port, its mode switched through a file."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/cgraph"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, mode: str) -> None:
        self.mode(mode)
        (self.folder / "ready").unlink(missing_ok=True)
        command = [sys.executable, str(RECEIVER), str(self.port), SECRET, str(self.folder)]
        self.process = subprocess.Popen(command, env=environment())
        waited(lambda: (self.folder / "ready").exists(), "the receiver to start")

    def mode(self, mode: str) -> None:
        # Replaced whole: the receiver reads the file at every request, and a write in
        # place showed one request an empty mode between the truncation and the write.
        written = self.folder / "mode.new"
        written.write_text(mode)
        os.replace(written, self.folder / "mode")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def received(self) -> list[dict[str, Any]]:
        file = self.folder / "received.jsonl"
        return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


def waited(done: Callable[[], Any], what: str, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = done()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"waited {seconds:g} s for {what}")


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    folder = tmp_path / "receiver"
    folder.mkdir()
    running = Receiver(folder)
    yield running
    running.kill()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "store")
    return str(request.getfixturevalue("pg_url"))


def serve(
    store: str, receiver: Receiver, folder: Path, *, events: str = EVENTS, script: Path = SCRIPT
) -> Server:
    wanted = f" events={events}" if events else ""
    hook = f"{receiver.url}{wanted} secret=env:HOOK_SECRET timeout={HOOK_SECONDS:g} backoff=0.1"
    return start(
        str(GRAPHS / "talk.yaml"),
        *("--store", store, "--memory", "off", "--model", f"scripted:{script}"),
        *("--webhook", hook),
        folder=folder,
        HOOK_SECRET=SECRET,
    )


def deliveries(server: Server, **query: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (
        server.client().get("/v1/webhooks/deliveries", params=query).json()["deliveries"]
    )
    return found


def test_every_event_arrives_signed_through_failures_timeouts_and_restarts(
    tmp_path: Path, receiver: Receiver, store: str
) -> None:
    receiver.start("fail")
    server = serve(store, receiver, tmp_path)
    try:
        client = server.client()
        sid = client.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}).status_code == 200
        failing = waited(
            lambda: [d for d in deliveries(server) if d["last_error"] == "answered 500"],
            "a delivery answered 500",
        )
        assert failing[0]["status"] == "pending" and failing[0]["attempts"] >= 1
        receiver.mode("slow")
        waited(
            lambda: any(d["last_error"] == "no answer within 2 s" for d in deliveries(server)),
            "a delivery that timed out",
        )
        began = time.monotonic()  # a turn while its deliveries hang: it waits for none
        assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "on"}).status_code == 200
        assert time.monotonic() - began < HOOK_SECONDS * 0.75
        receiver.kill()
        server.stop(signal.SIGKILL)  # what was not delivered waits in the store
        server = serve(store, receiver, tmp_path)
        client = server.client()
        assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "go"}).status_code == 200
        waited(
            lambda: any("ConnectError" in (d["last_error"] or "") for d in deliveries(server)),
            "a delivery to the stopped receiver",
        )
        waited(  # retried enough that the receiver, back, sees a third attempt at least
            lambda: any(d["attempts"] >= 3 for d in deliveries(server)),
            "a delivery tried three times",
        )
        receiver.start("ok")
        done = waited(
            lambda: (found := deliveries(server, status="delivered")) and len(found) == 4 and found,
            "every delivery",
        )
    finally:
        server.stop(signal.SIGKILL)
    assert deliveries_by_type(done) == {"session.started": 1, "turn.committed": 3}
    assert all(d["event"]["session"] == sid and d["event"]["user"] == "local" for d in done)
    turns = sorted(d["event"]["data"]["turn"] for d in done if d["type"] == "turn.committed")
    assert turns == [1, 2, 3]
    received = receiver.received()
    assert all(r["valid"] and r["header_id"] == r["id"] for r in received)
    assert {r["mode"] for r in received} == {"fail", "slow", "ok"}
    delivered = [r for r in received if r["mode"] == "ok"]
    assert {r["id"] for r in delivered} == {d["event_id"] for d in done}  # at least once each
    assert {r["type"] for r in received} <= set(EVENTS.split(","))  # the filter holds
    assert max(r["attempt"] for r in received) >= 3


def deliveries_by_type(found: list[dict[str, Any]]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for delivery in found:
        counted[delivery["type"]] = counted.get(delivery["type"], 0) + 1
    return counted


def test_a_server_killed_right_after_a_reply_sends_every_event_of_its_committed_turns(
    tmp_path: Path, receiver: Receiver, store: str
) -> None:
    """The receiver is down until the server was killed: nothing could be sent before, so
    what arrives was in the store when the reply went out. Session `b`'s turn is waiting
    on the model when the kill lands: it never committed, and nothing tells of it."""
    slow = tmp_path / "slow.yaml"
    slow.write_text("talk: {sleep: 3, then: {exit: stay, reason: stays, reply: ok}}\n")
    server = serve(store, receiver, tmp_path, events="", script=slow)
    answers: dict[str, Any] = {}
    try:
        client = server.client()
        a, b = (client.post("/v1/sessions", json={"graph": "talk"}).json()["session"] for _ in "ab")

        def send(sid: str) -> None:
            with server.client() as own:
                answers[sid] = own.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"})

        in_flight = threading.Thread(target=send, args=(b,))
        threading.Timer(1.0, in_flight.start).start()
        send(a)  # its reply, then at once:
        server.stop(signal.SIGKILL)
        in_flight.join()
    finally:
        server.stop(signal.SIGKILL)
    assert answers[a].status_code == 200 and b not in answers  # `b` was cut off mid-turn
    assert receiver.received() == []
    receiver.start("ok")
    server = serve(store, receiver, tmp_path, events="")
    try:
        expected = {(a, "session.started", 0), (b, "session.started", 0), (a, "turn.committed", 1)}
        expected |= {(a, "state.entered", 1) for _ in answers[a].json()["path"]}
        arrived = waited(
            lambda: expected <= (got := _told(receiver)) and got,
            "every event of the committed turns",
        )
        time.sleep(1.0)  # a straggler would come within the dispatcher's next looks
        arrived = _told(receiver)
        listed = deliveries(server)
    finally:
        server.stop(signal.SIGKILL)
    assert arrived == expected
    assert not [d for d in listed if d["event"]["session"] == b and d["type"] != "session.started"]
    committed = next(
        r for r in _bodies(receiver) if r["type"] == "turn.committed" and r["session"] == a
    )
    assert committed["data"] == answers[a].json()  # the turn as its reply told it
    assert all(r["valid"] for r in receiver.received())


def _bodies(receiver: Receiver) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (receiver.folder / "bodies.jsonl").read_text().splitlines()
    ]


def _told(receiver: Receiver) -> set[tuple[str, str, int]]:
    """What arrived, deduplicated by event id as a receiver does: (session, type, turn)."""
    if not (receiver.folder / "bodies.jsonl").exists():
        return set()
    unique = {r["id"]: r for r in _bodies(receiver)}
    return {(r["session"], r["type"], r["turn"]) for r in unique.values()}
