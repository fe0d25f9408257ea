"""One writer per session: what a process adds in front of a store's leases.

A store takes, renews and lets go of a session's lease in short statements of its own
(`SessionStore.acquire`, `renew`, `release`) and refuses a write whose fence is not the
lease in force. `Holding` is a store's side in this process (each store opened has its
own): a queue per session so that its waiters are served first come, first served (only
the head of a queue asks the store, so a session's lease is never raced for by two of
this process's requests), one thread that renews every lease held in one statement, and
the fence of the lease held for each session, which the store's writes carry by default.

Nothing is held while a turn waits on a model: no connection, no lock, no thread of the
store's. A holder killed with -9 stops renewing, and its leases lapse after their `ttl`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from cgraph.errors import LeaseLost, SessionBusy, StoreError
from cgraph.runtime.ports import Lease

LEASE_SECONDS = 4.0
"""How long a lease lasts unrenewed: how long a killed holder keeps its sessions from the
next one (less than the server's default wait, so a request after a crash gets them)."""
RENEW_SHARE = 0.25
"""Leases are renewed every quarter of their ttl: two renewals may fail before one lapses."""
LET_GO_KEPT = 10_000
"""Sessions whose last fence let go `Holding.followed` remembers (the oldest forgotten)."""
POLL_FIRST, POLL_MOST = 0.005, 0.1
"""Seconds between two tries of a lease another process holds: doubling, up to a bound."""
LOG = logging.getLogger("cgraph.store")


def _paused(session_id: str, deadline: float, pause: float) -> float:
    """How long to wait before asking for a lease again; busy once the wait is over."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise busy(session_id)
    return min(pause, left)


def _doubled(pause: float) -> float:
    return min(pause * 2, POLL_MOST)


def busy(session_id: str) -> SessionBusy:
    """The one error a store raises when another holder keeps the session."""
    return SessionBusy.of(session_id)


def lost(session_id: str, fence: int | None) -> LeaseLost:
    """The error of a write refused for its fence."""
    held = "no lease" if fence is None else f"lease {fence}"
    return LeaseLost(
        f"session `{session_id}`: a write with {held} was refused; another holder's lease is "
        "in force (this one lapsed, or was let go)"
    )


def holder_id() -> str:
    """This opening of a store: machine, process, the process's start, and a random part
    (two stores opened in one process are two holders)."""
    return f"{socket.gethostname()}/{os.getpid()}/{_started(os.getpid())}/{uuid.uuid4().hex[:8]}"


def alive(holder: str) -> bool | None:
    """Whether a holder of this machine is still running (its process, started when it
    was); None for another machine's, which only its lease's expiry tells."""
    host, pid, started, _ = [*holder.split("/"), "", "", "", ""][:4]
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return _started(int(pid)) == started


def _started(pid: int) -> str:
    """When process `pid` started (clock ticks since boot), "" when it is not running; a
    number reused by a later process does not look like the holder."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return ""
        except OSError:
            pass
        return "-"  # no /proc: running is all that is known
    return stat.rsplit(")", 1)[1].split()[19]


class Leasing(Protocol):
    """The lease statements of a store (`SessionStore`)."""

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None: ...

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]: ...

    def release(self, lease: Lease) -> None: ...


class AwaitedLeasing(Leasing, Protocol):
    """A store whose lease statements may be awaited (`Holding.ahold`)."""

    async def aacquire(
        self, session_id: str, *, ttl: float, key: str | None = None
    ) -> Lease | None: ...

    async def arelease(self, lease: Lease) -> None: ...


class Leased:
    """A store's `hold` (`SessionStore.hold`), the same for every store: the session's
    lease taken through the store's `Holding` (`leases`), mixed in by each store."""

    leases: Holding

    @contextmanager
    def hold(
        self,
        session_id: str,
        *,
        wait: float = 0.0,
        ttl: float | None = None,
        key: str | None = None,
    ) -> Iterator[Lease]:
        with self.leases.hold(session_id, wait, ttl, key) as lease:
            yield lease

    @asynccontextmanager
    async def ahold(
        self,
        session_id: str,
        *,
        wait: float = 0.0,
        ttl: float | None = None,
        key: str | None = None,
    ) -> AsyncIterator[Lease]:
        """`hold` on an event loop, for a store that awaits its lease statements."""
        async with self.leases.ahold(session_id, wait, ttl, key) as lease:
            yield lease


@dataclass
class _Held:
    lease: Lease
    ttl: float


class Holding:
    """The leases a store holds in this process, who waits for which, and their renewal."""

    def __init__(self, store: Leasing, ttl: float = LEASE_SECONDS) -> None:
        self.store, self.ttl = store, ttl
        self.holder = holder_id()
        self._guard = threading.Lock()
        self._queues: dict[str, deque[threading.Event]] = {}
        self._held: dict[str, _Held] = {}
        self._renewing: threading.Thread | None = None
        self._let_go_at: OrderedDict[str, int] = OrderedDict()

    def released(self, lease: Lease) -> None:
        """A store's release of `lease` went through: from then on no write carrying its
        fence can be committed (a write waits on the lease row, which the release
        updates, and is refused after it)."""
        with self._guard:
            self._let_go_at[lease.session_id] = lease.fence
            self._let_go_at.move_to_end(lease.session_id)
            if len(self._let_go_at) > LET_GO_KEPT:
                self._let_go_at.popitem(last=False)

    def followed(self, session_id: str, fence: int) -> bool:
        """Whether a lease of `fence` is the session's first or follows the one this
        holder let go last: no other holder's write can then commit after it was taken.
        Nor one of this holder's: its writes are a turn's, made under its `hold` (a turn
        cancelled meanwhile waits for its worker's statement, `drive_async`), and the next
        request of the session asks for the lease only once that hold is let go."""
        with self._guard:
            return fence == 1 or self._let_go_at.get(session_id) == fence - 1

    def fence(self, session_id: str, given: int | None = None) -> int | None:
        """The fence a write of `session_id` carries: `given`, else the held lease's."""
        if given is not None:
            return given
        with self._guard:
            held = self._held.get(session_id)
        return None if held is None else held.lease.fence

    @property
    def holding(self) -> bool:
        return bool(self._held)

    @contextmanager
    def hold(
        self, session_id: str, wait: float, ttl: float | None = None, key: str | None = None
    ) -> Iterator[Lease]:
        """The session's lease while the context is open (`SessionStore.hold`)."""
        ttl, deadline, ticket, queue = self._enter(session_id, wait, ttl)
        try:
            self._wait_turn(session_id, ticket, queue, deadline)
            lease = self._polled(session_id, deadline, ttl, key)
        except BaseException:
            self._leave(session_id, ticket)
            raise
        try:
            yield lease
        finally:
            try:
                self.store.release(self._let_go(session_id, lease))
            except StoreError as err:  # it lapses by itself
                LOG.warning("%s", err)
            finally:
                self._leave(session_id, ticket)

    @asynccontextmanager
    async def ahold(
        self, session_id: str, wait: float, ttl: float | None = None, key: str | None = None
    ) -> AsyncIterator[Lease]:
        """`hold` on an event loop: the store's statements awaited, a lease another process
        holds polled with the loop's sleep. (A thread of this process ahead in the queue is
        waited for in a thread: the server's own requests queue on the loop before.)"""
        store = cast(AwaitedLeasing, self.store)
        ttl, deadline, ticket, queue = self._enter(session_id, wait, ttl)
        try:
            with self._guard:
                first = queue[0] is ticket
            if not first:
                await asyncio.to_thread(self._wait_turn, session_id, ticket, queue, deadline)
            pause = POLL_FIRST
            while (lease := await store.aacquire(session_id, ttl=ttl, key=key)) is None:
                await asyncio.sleep(_paused(session_id, deadline, pause))
                pause = _doubled(pause)
            self._taken(lease, ttl)
        except BaseException:
            self._leave(session_id, ticket)
            raise
        try:
            yield lease
        finally:
            try:
                await store.arelease(self._let_go(session_id, lease))
            except StoreError as err:  # it lapses by itself
                LOG.warning("%s", err)
            finally:
                self._leave(session_id, ticket)

    def _enter(
        self, session_id: str, wait: float, ttl: float | None
    ) -> tuple[float, float, threading.Event, deque[threading.Event]]:
        """In the session's queue: the lease's ttl, the wait's deadline, the ticket."""
        ttl = self.ttl if ttl is None else ttl
        deadline = time.monotonic() + max(wait, 0.0)
        ticket = threading.Event()
        with self._guard:
            queue = self._queues.setdefault(session_id, deque())
            queue.append(ticket)
        return ttl, deadline, ticket, queue

    def _wait_turn(
        self,
        session_id: str,
        ticket: threading.Event,
        queue: deque[threading.Event],
        deadline: float,
    ) -> None:
        """Wait to be the head of the session's queue."""
        while True:
            with self._guard:
                if queue[0] is ticket:
                    return
            left = deadline - time.monotonic()
            if left <= 0 or not ticket.wait(left):
                raise busy(session_id)

    def _polled(self, session_id: str, deadline: float, ttl: float, key: str | None) -> Lease:
        """The store's lease, asked again while another process holds it."""
        pause = POLL_FIRST
        while (lease := self.store.acquire(session_id, ttl=ttl, key=key)) is None:
            time.sleep(_paused(session_id, deadline, pause))
            pause = _doubled(pause)
        self._taken(lease, ttl)
        return lease

    def _taken(self, lease: Lease, ttl: float) -> None:
        with self._guard:
            self._held[lease.session_id] = _Held(lease, ttl)
            self._renew_in_background()

    def _let_go(self, session_id: str, lease: Lease) -> Lease:
        """The lease to let go of: the held one (renewed since it was taken)."""
        with self._guard:
            held = self._held.pop(session_id, None)
        return held.lease if held is not None else lease

    def _leave(self, session_id: str, ticket: threading.Event) -> None:
        """Out of the queue; the next in it, if this was its head, asks the store next."""
        with self._guard:
            queue = self._queues[session_id]
            was_head = queue[0] is ticket
            queue.remove(ticket)
            if not queue:
                del self._queues[session_id]
            elif was_head:
                queue[0].set()

    def _renew_in_background(self) -> None:
        """Start the renewing thread if it is not running (called under `_guard`)."""
        if self._renewing is None or not self._renewing.is_alive():
            self._renewing = threading.Thread(target=self._renew, name="cgraph-leases", daemon=True)
            self._renewing.start()

    def _renew(self) -> None:
        """Renew every held lease in one statement per ttl, until none is held."""
        while True:
            with self._guard:
                if not self._held:
                    self._renewing = None
                    return
                pause = min(h.ttl for h in self._held.values()) * RENEW_SHARE
            time.sleep(pause)
            self.renew_now()

    def renew_now(self) -> None:
        """Renew the held leases once. One lost stays held: the store then refuses its
        writes, which is what tells the turn it is no longer the session's writer."""
        with self._guard:
            held = list(self._held.values())
        for ttl in {h.ttl for h in held}:
            leases = [h.lease for h in held if h.ttl == ttl]
            try:
                renewed = {lease.session_id: lease for lease in self.store.renew(leases, ttl=ttl)}
            except StoreError as err:
                LOG.warning("leases not renewed (they lapse unless the store answers): %s", err)
                continue
            with self._guard:
                for lease in leases:
                    now = self._held.get(lease.session_id)
                    if now is None or now.lease != lease:
                        continue  # let go, or taken again, while the statement ran
                    if lease.session_id in renewed:
                        now.lease = renewed[lease.session_id]
                    else:
                        LOG.warning("session `%s`: lease %d lost", lease.session_id, lease.fence)
