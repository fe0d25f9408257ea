"""Events pushed out: `--webhook 'URL [events=TYPE,…] [secret=env:NAME|file:PATH]
[timeout=SECONDS] [backoff=SECONDS]'`. Each event a destination asks for is POSTed to it
as JSON, signed with HMAC-SHA256 (`X-Cgraph-Signature: t=TIME,v1=HEX` over `TIME.BODY`),
retried with exponential backoff until it is answered 2xx, and given an id the receiver
can deduplicate by (delivery is at least once).

A turn never waits for a webhook: it hands its events to a queue in memory; one thread
writes them to the outbox in the store (`cgraph.wiring.stores.open_outbox`: it survives a
restart) and sends what is due from there. `GET /v1/webhooks/deliveries` shows a user's
deliveries and what went wrong with them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cgraph.errors import ConfigError
from cgraph.serve import logs
from cgraph.session import Turn
from cgraph.wiring.stores import Delivery, Outbox, open_outbox

if TYPE_CHECKING:
    from starlette.requests import Request

    from cgraph.serve.watch import Answered, Seen

EVENTS = (
    "session.started",
    "turn.committed",
    "state.entered",
    "session.completed",
    "guard.hit",
    "fallback",
)
ATTEMPTS = 12
"""Attempts before a delivery is given up (`failed`): about an hour of backoff."""
FIRST_WAIT, LONGEST_WAIT = 1.0, 600.0
LEASE_MARGIN = 5.0
"""A claimed delivery is left alone by other dispatchers for its longest attempt and this:
after a dispatcher died mid-attempt, another sends it that much later."""
POLL = 0.5
SIGNATURE = "x-cgraph-signature"
OPTIONS = ("events", "secret", "timeout", "backoff")


@dataclass(frozen=True, slots=True)
class Destination:
    """One `--webhook`: where, which events, the secret that signs them."""

    url: str
    events: frozenset[str]
    secret: bytes
    timeout: float = 5.0
    """Seconds an attempt waits for the answer."""
    backoff: float = FIRST_WAIT
    """Seconds before the second attempt; each next waits twice as long (at most
    `LONGEST_WAIT`), less a random part of up to half."""


def destinations(specs: tuple[str, ...]) -> tuple[Destination, ...]:
    """Every `--webhook` read; `ConfigError` saying which one is wrong and how."""
    return tuple(_destination(spec) for spec in specs)


def _destination(spec: str) -> Destination:
    url, *options = spec.split()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--webhook {spec!r}: start with the URL (http:// or https://)")
    given: dict[str, str] = {}
    for option in options:
        name, equals, value = option.partition("=")
        if not equals or name not in OPTIONS:
            raise ConfigError(
                f"--webhook {url}: `{option}` is not one of {', '.join(f'{o}=…' for o in OPTIONS)}"
            )
        given[name] = value
    events = frozenset(given.get("events", ",".join(EVENTS)).split(","))
    unknown = sorted(events - set(EVENTS))
    if unknown:
        raise ConfigError(
            f"--webhook {url}: no event {', '.join(unknown)}; events are {', '.join(EVENTS)}"
        )
    timeout, backoff = (_seconds(url, name, given.get(name)) for name in ("timeout", "backoff"))
    secret = _secret(url, given.get("secret"))
    return Destination(url, events, secret, timeout or 5.0, backoff or FIRST_WAIT)


def _seconds(url: str, name: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= LONGEST_WAIT:
        raise ConfigError(f"--webhook {url}: {name}= takes seconds (0 to {LONGEST_WAIT:g})")
    return seconds


def _secret(url: str, where: str | None) -> bytes:
    """The signing secret, from `env:NAME` or `file:PATH` (never the command line itself,
    which any user of the machine can read)."""
    if where is None:
        raise ConfigError(f"--webhook {url}: give secret=env:NAME or secret=file:PATH")
    kind, _, name = where.partition(":")
    if kind == "env":
        value = os.environ.get(name, "")
        if not value:
            raise ConfigError(f"--webhook {url}: the variable {name} is not set")
        return value.encode()
    if kind == "file":
        try:
            return Path(name).read_bytes().strip()
        except OSError as err:
            raise ConfigError(f"--webhook {url}: cannot read {name} ({err.strerror})") from err
    raise ConfigError(f"--webhook {url}: secret= takes env:NAME or file:PATH")


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """`t=TIME,v1=HEX`: HMAC-SHA256 of `TIME.BODY` (the time guards against replays)."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def events_of(turn: Turn) -> list[tuple[str, dict[str, Any]]]:
    """What a committed turn tells: the turn, each state entered, and whether it completed
    the session, hit a guard or fell back."""
    found: list[tuple[str, dict[str, Any]]] = [("turn.committed", turn.as_json())]
    found += [("state.entered", {"state": state}) for state in turn.path]
    if turn.completed:
        found.append(("session.completed", {"state": turn.state}))
    if turn.guard:
        found.append(("guard.hit", {"guard": turn.guard, "state": turn.state}))
    if turn.fallback:
        found.append(("fallback", {"state": turn.state}))
    return found


class Webhooks:
    """The reporting part that sends events (`cgraph.serve.watch.Part`), and its thread."""

    def __init__(
        self, outbox: Outbox, sent_to: tuple[Destination, ...], *, dispatch: bool = True
    ) -> None:
        self.outbox, self.destinations = outbox, {d.url: d for d in sent_to}
        self._queue: queue.Queue[Delivery] = queue.Queue()
        self._stop = threading.Event()
        self._sender = ThreadPoolExecutor(4, thread_name_prefix="cgraph-webhook")
        self._thread = threading.Thread(target=self._run, name="cgraph-webhooks", daemon=True)
        if dispatch:
            self._thread.start()

    # ----- what a turn hands over (never waits, never fails) ---------------------------

    @contextmanager
    def request(self, request: Request, answered: Answered) -> Iterator[None]:
        yield

    def started(self, graph: str, session: str, user: str) -> None:
        self._put("session.started", {}, graph=graph, session=session, user=user, turn=0)

    def turn(self, seen: Seen) -> None:
        if seen.turn is None:
            return
        for kind, data in events_of(seen.turn):
            self._put(
                kind, data, graph=seen.graph, session=seen.session, user=seen.user,
                turn=seen.turn.number,
            )  # fmt: skip

    def _put(
        self, kind: str, data: dict[str, Any], *, graph: str, session: str, user: str, turn: int
    ) -> None:
        wanted = [d for d in self.destinations.values() if kind in d.events]
        if not wanted:
            return
        extra = data.get("state", "") if kind == "state.entered" else ""
        event_id = (
            "evt_" + hashlib.sha256(f"{session}\0{turn}\0{kind}\0{extra}".encode()).hexdigest()[:24]
        )
        now = time.time()
        event = {
            "id": event_id,
            "type": kind,
            "created": now,
            "graph": graph,
            "session": session,
            "user": user,
            "turn": turn,
            "data": data,
        }
        body = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        for destination in wanted:
            key = hashlib.sha256(f"{event_id}\0{destination.url}".encode()).hexdigest()[:24]
            self._queue.put(
                Delivery(
                    id=f"dlv_{key}",
                    event_id=event_id,
                    destination=destination.url,
                    type=kind,
                    owner=user,
                    body=body,
                    next_at=now,
                    created_at=now,
                )
            )

    # ----- the dispatcher's thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._keep(wait=POLL)
                self._send_due()
            except Exception:  # the store is down: keep what is queued, try again
                logs.LOG.exception("webhooks: the outbox failed; retrying")
                self._stop.wait(POLL)

    def _keep(self, wait: float) -> None:
        """Move what the turns queued into the outbox (waiting up to `wait` for some)."""
        taken: list[Delivery] = []
        try:
            taken.append(self._queue.get(timeout=wait) if wait else self._queue.get_nowait())
            while True:
                taken.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        if taken:
            try:
                self.outbox.add(taken)
            except Exception:
                for delivery in taken:  # not lost: queued again for the next round
                    self._queue.put(delivery)
                raise

    def _send_due(self) -> None:
        longest = max((d.timeout for d in self.destinations.values()), default=0.0)
        due = self.outbox.claim(time.time(), longest + LEASE_MARGIN, 32)
        for settled in self._sender.map(self._attempt, due):
            self.outbox.settle(settled)

    def _attempt(self, delivery: Delivery) -> Delivery:
        """One POST of `delivery`, and the delivery as it stands after it."""
        import httpx

        destination = self.destinations.get(delivery.destination)
        attempts = delivery.attempts + 1
        if destination is None:  # a destination this server no longer has
            return replace(delivery, status="failed", last_error="no such --webhook now")
        body = delivery.body.encode()
        stamp = int(time.time())
        headers = {
            "content-type": "application/json",
            "user-agent": "cgraph-webhooks",
            "x-cgraph-event": delivery.type,
            "x-cgraph-event-id": delivery.event_id,
            "x-cgraph-delivery": delivery.id,
            "x-cgraph-attempt": str(attempts),
            SIGNATURE: signature(destination.secret, stamp, body),
        }
        try:
            answer = httpx.post(
                delivery.destination, content=body, headers=headers, timeout=destination.timeout
            )
            error = None if answer.is_success else f"answered {answer.status_code}"
        except httpx.TimeoutException:
            error = f"no answer within {destination.timeout:g} s"
        except httpx.HTTPError as err:
            error = f"{type(err).__name__}: {err}"
        now = time.time()
        if error is None:
            return replace(
                delivery, status="delivered", attempts=attempts, last_error=None, delivered_at=now
            )
        given_up = attempts >= ATTEMPTS
        wait = min(LONGEST_WAIT, destination.backoff * 2 ** (attempts - 1))
        wait *= 0.5 + random.random() / 2
        logs.line(
            "webhook failed",
            30,
            destination=delivery.destination,
            event_id=delivery.event_id,
            attempt=attempts,
            error=error,
        )
        return replace(
            delivery,
            status="failed" if given_up else "pending",
            attempts=attempts,
            next_at=now + wait,
            last_error=error,
        )

    def close(self) -> None:
        """Stop sending; what is queued is written to the outbox first (sent by the next
        server to run on this store)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sender.shutdown(wait=False, cancel_futures=True)
        try:
            self._keep(wait=0)
        except Exception:
            logs.LOG.exception("webhooks: events still queued could not be stored")

    def listed(self, owner: str, status: str | None, limit: int) -> dict[str, Any]:
        found = self.outbox.deliveries(owner, status, limit)
        return {"deliveries": [_shown(d) for d in found]}


def _shown(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "event_id": delivery.event_id,
        "type": delivery.type,
        "destination": delivery.destination,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "next_attempt_at": delivery.next_at if delivery.status == "pending" else None,
        "last_error": delivery.last_error,
        "created_at": delivery.created_at,
        "delivered_at": delivery.delivered_at,
        "event": json.loads(delivery.body),
    }


def open_webhooks(store: str, specs: tuple[str, ...]) -> Webhooks | None:
    """The webhooks `--webhook` asks for, on the outbox beside `store`; None without any."""
    if not specs:
        return None
    return Webhooks(open_outbox(store), destinations(specs))
