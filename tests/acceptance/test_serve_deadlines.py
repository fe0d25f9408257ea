"""Slow clients against a real `cgraph serve`: 300 connections trickling their headers, and
bodies trickled after whole headers, are closed within the clocks (`--header-timeout`,
`--body-timeout`) while a client that sends its requests in time is served throughout,
past the connection cap (`--max-connections`)."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.commands import CGRAPH, ran
from tests.serving import GRAPHS, SCRIPT, Server, serving

pytestmark = pytest.mark.slow  # a real server process, seconds of trickling

HEADER_SECONDS, BODY_SECONDS, CAP = 2.0, 3.0, 100
SLACK = 2.0
"""What the bound allows beyond a clock: the test's own ticks, a loaded machine."""
TRICKLERS = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("deadlines")
    with serving(
        str(GRAPHS / "talk.yaml"),
        *("--store", str(folder / "store"), "--memory", "off", "--model", f"scripted:{SCRIPT}"),
        *("--header-timeout", str(HEADER_SECONDS), "--body-timeout", str(BODY_SECONDS)),
        *("--max-connections", str(CAP), "--turns-per-minute", "1000"),
        folder=folder,
    ) as running:
        yield running


class Tricklers:
    """Raw sockets that each send `first`, then one byte of `drip` a tick, and the time
    the server closed each (None: still open)."""

    def __init__(self, server: Server, count: int, first: bytes, drip: bytes) -> None:
        port = int(server.url.rsplit(":", 1)[1])
        self.started = time.monotonic()
        self.sockets: list[socket.socket] = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(first)
            s.setblocking(False)
            self.sockets.append(s)
        self.closed: list[float | None] = [None] * count
        self.answers: list[bytes] = [b""] * count
        self.drip, self.sent = drip, 0

    def tick(self) -> None:
        """One more byte on each open socket; note the ones the server closed."""
        byte = self.drip[self.sent % len(self.drip) : self.sent % len(self.drip) + 1]
        self.sent += 1
        for n, s in enumerate(self.sockets):
            if self.closed[n] is None:
                try:
                    s.send(byte, socket.MSG_NOSIGNAL)
                except OSError:
                    self.closed[n] = time.monotonic() - self.started
        readable, _, _ = select.select([s for s in self.sockets if s.fileno() >= 0], [], [], 0)
        for s in readable:
            n = self.sockets.index(s)
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            self.answers[n] += got
            if not got and self.closed[n] is None:
                self.closed[n] = time.monotonic() - self.started

    def run(self, until: float, tick: float = 0.25) -> None:
        while time.monotonic() - self.started < until and None in self.closed:
            self.tick()
            time.sleep(tick)

    def close(self) -> None:
        for s in self.sockets:
            s.close()


def served_meanwhile(server: Server, stop: threading.Event) -> list[tuple[int, float]]:
    """(status, seconds) of each request a punctual client sends, each on a new
    connection, until `stop`."""
    answered: list[tuple[int, float]] = []

    def punctual() -> None:
        while not stop.is_set():
            began = time.monotonic()
            with httpx.Client(base_url=server.url, timeout=10) as client:
                status = client.get("/v1/graphs", headers={"connection": "close"}).status_code
            answered.append((status, time.monotonic() - began))
            time.sleep(0.1)

    threading.Thread(target=punctual, daemon=True).start()
    return answered


def test_trickled_headers_are_closed_within_the_clock_while_others_are_served(
    server: Server,
) -> None:
    stop = threading.Event()
    answered = served_meanwhile(server, stop)
    slow = Tricklers(server, TRICKLERS, b"GET /v1/graphs HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"x-a")
    try:
        slow.run(until=HEADER_SECONDS + SLACK + 5)
    finally:
        stop.set()
        slow.close()
    assert None not in slow.closed, f"{slow.closed.count(None)} still open"
    assert max(t for t in slow.closed if t is not None) <= HEADER_SECONDS + SLACK
    timed_out = [a for a in slow.answers if a.startswith(b"HTTP/1.1 408")]
    assert timed_out and all(b'"request_timeout"' in a for a in timed_out)
    # past the cap, the punctual client's connection closed the longest-waiting trickler
    assert len(timed_out) <= CAP < TRICKLERS
    assert answered and {status for status, _ in answered} == {200}
    assert max(seconds for _, seconds in answered) < HEADER_SECONDS


def test_a_trickled_body_is_answered_408_and_starts_nothing(server: Server) -> None:
    head = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: 200\r\n\r\n"
    )
    slow = Tricklers(server, 20, head, b' {"graph": "talk"}')
    try:
        slow.run(until=BODY_SECONDS + SLACK + 5)
    finally:
        slow.close()
    assert None not in slow.closed
    assert min(t for t in slow.closed if t is not None) >= BODY_SECONDS - 0.5
    assert max(t for t in slow.closed if t is not None) <= BODY_SECONDS + SLACK
    assert all(a.startswith(b"HTTP/1.1 408") for a in slow.answers), set(slow.answers)
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/v1/sessions").json() == {"sessions": []}
    assert "Traceback" not in server.output()


def test_an_idle_connection_is_closed_at_the_header_clock(server: Server) -> None:
    """A connection that never sends a byte: uvicorn's keep-alive clock starts only after
    a first answer, this one at the connection."""
    port = int(server.url.rsplit(":", 1)[1])
    began = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=HEADER_SECONDS + SLACK) as idle:
        while chunk := idle.recv(4096):
            answer += chunk
    took = time.monotonic() - began
    assert HEADER_SECONDS - 0.5 <= took <= HEADER_SECONDS + SLACK
    assert answer.startswith(b"HTTP/1.1 408") and b'"request_timeout"' in answer


def test_the_clocks_are_refused_when_not_above_zero() -> None:
    done = ran([str(CGRAPH), "serve", str(GRAPHS / "talk.yaml"), "--header-timeout", "0"])
    assert done.returncode != 0 and "--header-timeout" in done.stderr
