"""How long a client may take to send its request, and how many connections one process
keeps open: uvicorn times out an idle kept-alive connection, but not one that trickles
its headers or its body (300 such connections stayed open for 90 s and took the file
descriptors valid clients needed).

`Guarded` is uvicorn's httptools protocol with two clocks and a cap:
- the headers: from the connection (or, kept alive, the first byte of the next request)
  to the end of the headers, at most `header_seconds`;
- the body: from the end of the headers to its last byte, at most `body_seconds`;
- past either, the client gets `408` and the connection is closed (a turn whose body
  never arrived runs nothing);
- at `max_connections`, a new connection closes the one that has waited longest without
  a request under way (idle, or still sending headers); when every one is mid-request,
  the new one gets `503` and is closed. A trickler thus never locks out a client that
  sends its request in time.
"""

from __future__ import annotations

import asyncio
import json
import resource
from dataclasses import dataclass
from functools import partial
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

RESERVED_FILES = 128
"""Open files kept back from connections: the store, memory, tool workers, logs."""
MAX_DEFAULT_CONNECTIONS = 10_000


@dataclass(frozen=True)
class Deadlines:
    """The clocks and the cap of one server process."""

    header_seconds: float
    body_seconds: float
    max_connections: int


def default_connections() -> int:
    """The cap when none is given: the open-file limit, raised to what the system allows
    this process (its hard limit), less `RESERVED_FILES`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, MAX_DEFAULT_CONNECTIONS * 2)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # not allowed here: keep the soft limit
            pass
    return max(16, min(MAX_DEFAULT_CONNECTIONS, soft - RESERVED_FILES))


def protocol(deadlines: Deadlines) -> Any:
    """What uvicorn's `http` setting takes to serve with `deadlines` (picklable, for the
    worker processes of `--workers N`)."""
    return partial(Guarded, deadlines=deadlines)


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": {"code": reason, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {'Request Timeout' if status == 408 else 'Service Unavailable'}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class Guarded(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the header and body clocks and the cap."""

    def __init__(self, *args: Any, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadlines = deadlines
        self._clock: asyncio.TimerHandle | None = None
        self.waiting_since: float | None = None
        """When it began to wait for a request's headers (None: a request is under way)."""

    # --- the clocks -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_headers()
        if len(self.connections) > self.deadlines.max_connections and not self._make_room():
            busy = f"over {self.deadlines.max_connections} connections here; try again"
            self._refuse(_refusal(503, "too_many_connections", busy))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._clock is None:  # a kept-alive connection's next request
            self._wait_for_headers()

    def on_headers_complete(self) -> None:
        self.waiting_since = None
        self._start(self.deadlines.body_seconds, self._body_late)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._stop()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.waiting_since is None and not self.transport.is_closing():
            self.waiting_since = self.loop.time()  # idle: the first to go at the cap

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _wait_for_headers(self) -> None:
        self.waiting_since = self.waiting_since or self.loop.time()
        self._start(self.deadlines.header_seconds, self._headers_late)

    def _start(self, seconds: float, late: Any) -> None:
        self._stop()
        self._clock = self.loop.call_later(seconds, late)

    def _stop(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None

    def _headers_late(self) -> None:
        self._clock = None
        said = f"the request's headers took over {self.deadlines.header_seconds:g} s"
        self._refuse(_refusal(408, "request_timeout", said))

    def _body_late(self) -> None:
        self._clock = None
        cycle = self.cycle
        if cycle is not None and cycle.response_started:
            self.transport.close()  # answered without the body: nothing more to say
            return
        if cycle is not None:  # the app reading the body sees the client gone
            cycle.disconnected, cycle.keep_alive = True, False
            cycle.message_event.set()
        said = f"the request's body took over {self.deadlines.body_seconds:g} s"
        self._refuse(_refusal(408, "request_timeout", said))

    def _refuse(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    # --- the cap --------------------------------------------------------------------------

    def _make_room(self) -> bool:
        """Close the connection that has waited longest without a request under way;
        False when every other one is mid-request."""
        waiting = [
            c
            for c in self.connections
            if c is not self and isinstance(c, Guarded) and c.waiting_since is not None
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
        oldest.waiting_since = None
        oldest.transport.close()
        return True
