"""Events pushed out: `--webhook 'URL [events=TYPE,…] [secret=env:NAME|file:PATH]
[timeout=SECONDS] [backoff=SECONDS]'`. Each event a destination asks for is POSTed to it
as JSON, signed with HMAC-SHA256 (`X-Cgraph-Signature: t=TIME,v1=HEX` over `TIME.BODY`),
retried with exponential backoff until it is answered 2xx, and given an id the receiver
can deduplicate by (delivery is at least once).

A turn never waits for a webhook and never hands one to memory: the session's store
writes the deliveries a turn makes (`Announce`) into its outbox in the transaction that
commits the turn's last step (`cgraph.session.Announcer`), so an event is kept exactly when
its turn is — a server killed right after a reply still sends every event of that turn
once it runs again, and a turn that never committed sends none. One thread (`Webhooks`)
only reads the outbox: it claims what is due, POSTs it and records how that went, woken
by each turn and polling for retries. `GET /v1/webhooks/deliveries` shows a user's
deliveries and what went wrong with them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
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
from cgraph.serve.ids import client_id
from cgraph.session import Turn
from cgraph.wiring.stores import Delivery, Outbox, SessionStore

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
"""Seconds between looks at the outbox when no turn wakes the dispatcher (retries due, or
deliveries another process's turns made)."""
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


def events_of(turn: Turn, session: str) -> list[tuple[str, str, dict[str, Any]]]:
    """What a committed turn tells, each with what tells it from the turn's other events
    of its type: the turn (naming its session as `session`, its user's id for it), each
    state entered (by its place in the path: a state entered twice is two events), and
    whether it completed the session, hit a guard or fell back."""
    committed = {**turn.as_json(), "session": session}
    found: list[tuple[str, str, dict[str, Any]]] = [("turn.committed", "", committed)]
    found += [("state.entered", str(i), {"state": s}) for i, s in enumerate(turn.path)]
    if turn.completed:
        found.append(("session.completed", "", {"state": turn.state}))
    if turn.guard:
        found.append(("guard.hit", "", {"guard": turn.guard, "state": turn.state}))
    if turn.fallback:
        found.append(("fallback", "", {"state": turn.state}))
    return found


class Announce:
    """The deliveries each event makes, one per destination that asks for its type
    (`cgraph.session.Announcer`): the store commits them with what they tell of."""

    def __init__(self, sent_to: tuple[Destination, ...]) -> None:
        self.destinations = sent_to

    def started(self, graph: str, session: str, user: str) -> list[Delivery]:
        where = {"graph": graph, "session": client_id(user, session), "user": user, "turn": 0}
        return self._made("session.started", "0", {}, where, session)

    def turned(self, graph: str, user: str, turn: Turn, since: int) -> list[Delivery]:
        sid = client_id(user, turn.session)
        where = {"graph": graph, "session": sid, "user": user, "turn": turn.number}
        try:
            return [
                delivery
                for kind, extra, data in events_of(turn, sid)
                for delivery in self._made(kind, f"{since}\0{extra}", data, where, turn.session)
            ]
        except Exception:  # a turn never fails for its webhooks (a bug here is logged)
            logs.LOG.exception("webhooks: the events of a turn could not be made")
            return []

    def _made(
        self, kind: str, key: str, data: dict[str, Any], where: dict[str, Any], stored: str
    ) -> list[Delivery]:
        """The deliveries of one event of the session the store keeps as `stored` (what
        its id is made of: two users' sessions `a` are two sessions)."""
        wanted = [d for d in self.destinations if kind in d.events]
        if not wanted:
            return []
        # The same on every commit of the same turn: a receiver deduplicates by it.
        made = f"{stored}\0{where['turn']}\0{kind}\0{key}"
        event_id = "evt_" + hashlib.sha256(made.encode()).hexdigest()[:24]
        now = time.time()
        event = {"id": event_id, "type": kind, "created": now, **where, "data": data}
        body = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        return [
            Delivery(
                id=_delivery_id(event_id, d.url),
                event_id=event_id,
                destination=d.url,
                type=kind,
                owner=where["user"],
                body=body,
                next_at=now,
                created_at=now,
            )
            for d in wanted
        ]


def _delivery_id(event_id: str, url: str) -> str:
    return "dlv_" + hashlib.sha256(f"{event_id}\0{url}".encode()).hexdigest()[:24]


class Webhooks:
    """The reporting part that sends what the outbox holds (`cgraph.serve.watch.Part`),
    and its thread; `announce` makes the deliveries the store commits."""

    def __init__(
        self, outbox: Outbox, sent_to: tuple[Destination, ...], *, dispatch: bool = True
    ) -> None:
        self.outbox, self.destinations = outbox, {d.url: d for d in sent_to}
        self.announce = Announce(sent_to)
        self._wake, self._stop = threading.Event(), threading.Event()
        self._sender = ThreadPoolExecutor(4, thread_name_prefix="cgraph-webhook")
        self._thread = threading.Thread(target=self._run, name="cgraph-webhooks", daemon=True)
        if dispatch:
            self._thread.start()

    # ----- what a turn tells the dispatcher: look now (the turn is committed) ----------

    @contextmanager
    def request(self, request: Request, answered: Answered) -> Iterator[None]:
        yield

    def started(self, graph: str, session: str, user: str) -> None:
        self._wake.set()

    def turn(self, seen: Seen) -> None:
        if seen.turn is not None:
            self._wake.set()

    # ----- the dispatcher's thread ------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(POLL)
            self._wake.clear()
            try:
                self.send_due()
            except Exception:  # the store is down: what waits there is sent later
                logs.LOG.exception("webhooks: the outbox failed; retrying")
                self._stop.wait(POLL)

    def send_due(self) -> None:
        """Claim what is due in the outbox, POST it, record how each went."""
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
        """Stop sending (what is not delivered waits in the outbox for the next server)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sender.shutdown(wait=False, cancel_futures=True)
        self.outbox.close()

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


def open_webhooks(store: SessionStore, specs: tuple[str, ...]) -> Webhooks | None:
    """The webhooks `--webhook` asks for, sending from `store`'s outbox; None without any."""
    if not specs:
        return None
    return Webhooks(store.outbox(), destinations(specs))
