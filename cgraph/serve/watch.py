"""What the server tells its operators of each request and each turn: the seam between the
service (which marks where a turn runs and what it returned) and the parts that report it —
the log, `/metrics`, traces, webhooks. Every part reads the `Turn` the library returned and
the model calls it reported (`cgraph.observe`); none of them instruments the runtime, and
none of them can fail or delay a turn (a part that raises is logged and skipped).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    ExitStack,
    asynccontextmanager,
    contextmanager,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from cgraph.errors import SessionBusy
from cgraph.observe import ModelCall, watching
from cgraph.serve import logs
from cgraph.serve.metrics import Metrics, outcome
from cgraph.session import Announcer, Event, Session, Turn

if TYPE_CHECKING:
    from starlette.requests import Request

T = TypeVar("T")


@dataclass(slots=True)
class Seen:
    """One turn as the service ran it: who, which session and graph, what it returned (or
    the error it raised), how long it took and the model calls it made."""

    user: str
    session: str
    graph: str = ""
    """Set once the session is open: a request refused before that is no turn."""
    turn: Turn | None = None
    error: BaseException | None = None
    started: float = field(default_factory=time.time)
    seconds: float = 0.0
    calls: list[ModelCall] = field(default_factory=list)
    request_id: str = ""
    opened: Session | None = field(default=None, repr=False)

    def open(self, session: Session) -> None:
        self.graph, self.opened = session.graph.name, session

    def done(self, turn: Turn, session: Session) -> None:
        self.open(session)
        self.turn = turn

    @property
    def counts(self) -> bool:
        """A turn ran (or failed once its session was open); a replayed key or a refusal
        before the session opened is none."""
        return self.turn is not None or (self.error is not None and bool(self.graph))

    def events(self) -> list[Event]:
        """The turn's events as the session logged them (for the steps of a trace)."""
        if self.turn is None or self.opened is None:
            return []
        return self.opened.log.turn_events(self.turn.number)


@dataclass(slots=True)
class Answered:
    """One request as the gate answered it."""

    method: str
    route: str
    request_id: str
    status: int = 500
    user: str | None = None
    session: str | None = None
    error_id: str | None = None


class Part(Protocol):
    """What one reporting part is told (each method may do nothing)."""

    def request(self, request: Request, answered: Answered) -> AbstractContextManager[Any]: ...

    def turn(self, seen: Seen) -> None: ...

    def started(self, graph: str, session: str, user: str) -> None: ...

    def close(self) -> None: ...


class Deliveries(Protocol):
    """The part that sends webhooks, as `GET /v1/webhooks/deliveries` asks it, and what
    makes the deliveries a session's store commits (`Sessions(announce=…)`)."""

    @property
    def announce(self) -> Announcer: ...

    def listed(self, owner: str, status: str | None, limit: int) -> dict[str, Any]: ...


class Watch:
    """The reporting parts of one app: the log always, the others as configured."""

    def __init__(
        self,
        metrics: Metrics | None = None,
        parts: tuple[Part, ...] = (),
        *,
        content: bool = False,
        webhooks: Deliveries | None = None,
    ) -> None:
        self.metrics, self.parts, self.content = metrics, parts, content
        self.webhooks = webhooks
        """The part that sends events, for `GET /v1/webhooks/deliveries` (also in `parts`)."""
        self.announce = webhooks.announce if webhooks is not None else None
        """What the sessions' stores commit for webhooks (None: none configured)."""

    def close(self) -> None:
        """The parts let go (what they still hold is exported or stored)."""
        for part in self.parts:
            _safely(part.close)

    @contextmanager
    def request(self, request: Request, route: str) -> Iterator[Answered]:
        """Around one request: its id (the client's `X-Request-Id` if sane, else a new one)
        for every line it logs, its span, and its log line and counts once answered."""
        answered = Answered(request.method, route, _request_id(request))
        token = logs.REQUEST_ID.set(answered.request_id)
        clock = time.perf_counter()
        try:
            with _all(part.request(request, answered) for part in self.parts):
                yield answered
        finally:
            seconds = time.perf_counter() - clock
            if self.metrics is not None:
                self.metrics.request(answered.method, route, answered.status, seconds)
            logs.line(
                "request",
                logging.ERROR if answered.status >= 500 else logging.INFO,
                method=answered.method,
                route=route,
                path=request.url.path,
                status=answered.status,
                seconds=round(seconds, 4),
                user=answered.user,
                session=answered.session,
                error_id=answered.error_id,
            )
            logs.REQUEST_ID.reset(token)

    @contextmanager
    def turn(self, user: str, session: str) -> Iterator[Seen]:
        """Around one turn of `session`: what it returned is marked on the `Seen` given
        (`open`, `done`); its model calls are collected; then every part is told."""
        seen = Seen(user, session, request_id=logs.REQUEST_ID.get())
        if self.metrics is not None:
            self.metrics.in_flight.inc()
        clock = time.perf_counter()
        try:
            with watching(self._call(seen)):
                yield seen
        except BaseException as error:
            seen.error = error
            raise
        finally:
            seen.seconds = time.perf_counter() - clock
            if self.metrics is not None:
                self.metrics.in_flight.dec()
            if seen.counts:
                self._turned(seen)

    def _call(self, seen: Seen) -> Callable[[ModelCall], None]:
        metrics = self.metrics

        def called(call: ModelCall) -> None:
            seen.calls.append(call)
            if metrics is not None:
                metrics.model_call(call)

        return called

    def _turned(self, seen: Seen) -> None:
        if self.metrics is not None:
            self.metrics.turn(seen.graph, seen.turn, seen.seconds)
        turn = seen.turn
        said = {"said": turn.user, "reply": turn.reply} if self.content and turn else {}
        logs.line(
            "turn",
            logging.INFO if turn is not None else logging.WARNING,
            graph=seen.graph,
            session=seen.session,
            user=seen.user,
            turn=turn.number if turn else None,
            state=turn.state if turn else None,
            outcome=outcome(turn),
            seconds=round(seen.seconds, 4),
            model_calls=len(seen.calls),
            **said,
        )
        for part in self.parts:
            _safely(part.turn, seen)

    def started(self, graph: str, session: str, user: str) -> None:
        """A session was started (before its opening turn, if it speaks first)."""
        if self.metrics is not None:
            self.metrics.session_started(graph)
        for part in self.parts:
            _safely(part.started, graph, session, user)

    @contextmanager
    def held(self, hold: AbstractContextManager[T], since: float | None = None) -> Iterator[T]:
        """`hold` (a session's lease), its wait timed (from `since`, a `perf_counter` time,
        when the wait began before) and a busy session (409) counted."""
        clock, entered = time.perf_counter() if since is None else since, False
        try:
            with hold as held:
                entered = True
                self._waited(clock)
                yield held
        except SessionBusy:
            if not entered:
                self.gave_up(clock)
            raise

    @asynccontextmanager
    async def aheld(
        self, hold: AbstractAsyncContextManager[T], since: float | None = None
    ) -> AsyncIterator[T]:
        """`held`, for a lease awaited on the loop."""
        clock, entered = time.perf_counter() if since is None else since, False
        try:
            async with hold as held:
                entered = True
                self._waited(clock)
                yield held
        except SessionBusy:
            if not entered:
                self.gave_up(clock)
            raise

    def _waited(self, since: float) -> None:
        if self.metrics is not None:
            self.metrics.waited(time.perf_counter() - since, busy=False)

    def gave_up(self, since: float) -> None:
        """A wait for a session's lease, begun at `since`, ran out: a 409 counted."""
        if self.metrics is not None:
            self.metrics.waited(time.perf_counter() - since, busy=True)


@contextmanager
def _all(managers: Iterator[AbstractContextManager[Any]]) -> Iterator[None]:
    with ExitStack() as stack:
        for manager in managers:
            stack.enter_context(manager)
        yield


def _safely(function: Callable[..., None], *args: Any) -> None:
    try:
        function(*args)
    except Exception:
        logs.LOG.exception("a reporting part failed (the turn is not affected)")


def _request_id(request: Request) -> str:
    given = request.headers.get("x-request-id", "")
    if 0 < len(given) <= 64 and given.isascii() and given.isprintable() and " " not in given:
        return given
    return uuid.uuid4().hex[:16]
