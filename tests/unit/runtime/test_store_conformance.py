"""Every session store answers the same: the log, the lookups a running session makes
without reading it whole, undo, and forgetting a session (each store runs every test)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import LeaseLost, SessionBusy, SessionNotFound, StoreError
from cgraph.runtime.ports import Delivery, Lease, SessionInfo, SessionStore
from cgraph.runtime.state.records import Event, EventKind

KINDS = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.slow),
    pytest.param("postgres-awaited", marks=pytest.mark.slow),
]
"""PostgreSQL is a real server process (`tests/postgres.py`): slow, as `make test-fast` counts.
`postgres-awaited` is the same store served on a loop: its commits and leases awaited."""


def opened(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "s.db")
    from cgraph.backends.store.postgres import PostgresStore

    made = PostgresStore(request.getfixturevalue("pg_url"))
    return Awaiting(made) if kind == "postgres-awaited" else made  # type: ignore[return-value]


class Awaiting:
    """A store served on a loop of its own (as `cgraph serve` serves it), called from the
    test's thread: `commit`, `acquire`, `release` and `hold` are its awaited statements
    (`acommit`, `aacquire`, `arelease`, `ahold`) run on that loop; the rest its own."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        store.serve_on(self.loop)
        assert store.awaits

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _on_loop(self, call: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(call, self.loop).result()

    def commit(self, *args: Any, **kwargs: Any) -> None:
        self._on_loop(self.store.acommit(*args, **kwargs))
        assert self.store._served.opened > 0  # through the loop's own connections

    def acquire(self, *args: Any, **kwargs: Any) -> Lease | None:
        return self._on_loop(self.store.aacquire(*args, **kwargs))  # type: ignore[no-any-return]

    def release(self, lease: Lease) -> None:
        self._on_loop(self.store.arelease(lease))

    @contextmanager
    def hold(self, *args: Any, **kwargs: Any) -> Iterator[Lease]:
        held = self.store.ahold(*args, **kwargs)
        lease = self._on_loop(held.__aenter__())
        try:
            yield lease
        except BaseException as err:
            if not self._on_loop(held.__aexit__(type(err), err, err.__traceback__)):
                raise
        else:
            self._on_loop(held.__aexit__(None, None, None))

    def close(self) -> None:
        self._on_loop(self.store.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.store.close()


@pytest.fixture(params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    made = opened(request.param, request, tmp_path)
    yield made
    made.close()


@pytest.fixture
def elsewhere(
    store: SessionStore, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[SessionStore]:
    """The same sessions as another process opens them (a holder of its own); the
    in-memory store's are one process's: the same store."""
    if isinstance(store, InMemorySessionStore):
        yield store
        return
    made = opened("sqlite" if isinstance(store, SQLiteStore) else "postgres", request, tmp_path)
    yield made
    made.close()


class Log:
    """Writes a session as the runtime does: events with their places and keys."""

    def __init__(
        self,
        store: SessionStore,
        session: str = "s",
        user: str = "ann",
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        self.store, self.session, self.seq, self.messages = store, session, 1, 0
        info = SessionInfo(session, user, "/g.yaml", "g", "scripted", created_at=1.0)
        first = Event(seq=0, session=session, turn=0, kind="session_started", at=1.0)
        snapshot = {"stack": [{"graph": "", "state": "a"}], "turn": 0}
        store.create(info, snapshot, [first], deliveries=deliveries)

    def event(self, number: int, kind: EventKind, **data: Any) -> Event:
        if kind in ("user_message", "reply"):
            data["msg"], self.messages = self.messages, self.messages + 1
        made = Event(seq=self.seq, session=self.session, turn=number, kind=kind, at=2.0, data=data)
        self.seq += 1
        return made

    def turn(
        self,
        turn: int,
        text: str,
        key: str | None = None,
        *,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> int:
        keyed = {"key": key} if key is not None else {}
        said = self.event(turn, "user_message", text=text, **keyed)
        events = [said, self.event(turn, "reply", text=f"re {text}")]
        snapshot = self.snapshot(turn, said.seq)
        self.store.commit(
            self.session, events, snapshot, checkpoint=turn, fence=fence, deliveries=deliveries
        )
        return said.seq

    def snapshot(self, turn: int, turn_seq: int) -> dict[str, Any]:
        stack = [{"graph": "", "state": "a"}]
        return {"stack": stack, "turn": turn, "turn_seq": turn_seq, "messages": self.messages}

    def undo(self, turn: int, restored: dict[str, Any]) -> None:
        self.messages = restored["messages"]
        undo = self.event(turn - 1, "undo", turn=turn, cancelled=False)
        self.store.commit(self.session, [undo], restored, rewind_to=turn - 1)


def texts(events: list[Event]) -> list[str]:
    return [str(e.data.get("text")) for e in events]


def test_load_reads_the_latest_turn_and_the_log_reads_in_pages(store: SessionStore) -> None:
    log = Log(store)
    for number in (1, 2, 3):
        log.turn(number, f"m{number}")
    loaded = store.load("s")
    assert [e.turn for e in loaded.events] == [3, 3] and loaded.snapshot["turn"] == 3
    assert [e.seq for e in store.events("s")] == list(range(7))
    assert [e.seq for e in store.events("s", after=2, limit=3)] == [3, 4, 5]


def test_messages_and_keys_follow_an_undo(store: SessionStore) -> None:
    log = Log(store)
    log.turn(1, "one", key="k1")
    log.turn(2, "two", key="k2")
    assert texts(store.message_events("s", 0, 4)) == ["one", "re one", "two", "re two"]
    restored = store.checkpoint("s", 1)
    assert restored is not None
    log.undo(2, restored)
    assert store.turn_of_key("s", "k2") is None  # free to be sent again
    again = log.turn(2, "deux", key="k2")
    assert texts(store.message_events("s", 0, 4)) == ["one", "re one", "deux", "re deux"]
    assert texts(store.message_events("s", 1, 3)) == ["re one", "deux"]
    assert store.turn_of_key("s", "k1") == (1, 1) and store.turn_of_key("s", "k2") == (2, again)
    assert store.checkpoint("s", 2) is not None


def test_standing_is_the_last_step_and_a_key_in_one_read(store: SessionStore) -> None:
    log, other = Log(store, "s"), Log(store, "t")
    other.turn(1, "elsewhere", key="k2")
    first = log.turn(1, "one", key="k1")
    stood = store.standing("s", "k1")
    assert (stood.created_at, stood.keyed) == (1.0, (1, first))
    assert store.standing("s").keyed is None and store.standing("s", "k2").keyed is None
    assert stood.seq is None  # a snapshot without a `seq`: as stored
    said = log.event(2, "user_message", text="two")
    snapshot = {**log.snapshot(2, said.seq), "seq": said.seq + 1}
    store.commit("s", [said], snapshot)
    assert store.standing("s", "k1").seq == said.seq + 1
    restored = store.checkpoint("s", 0)
    assert restored is not None
    log.undo(1, {**restored, "messages": 0})
    assert store.standing("s", "k1").keyed is None  # an undone turn's key is free again
    with pytest.raises(SessionNotFound):
        store.standing("nobody", "k1")


def test_a_lease_carries_the_standing_read_once_it_is_in_force(
    store: SessionStore, elsewhere: SessionStore
) -> None:
    log = Log(store)
    first = log.turn(1, "one", key="k1")
    lease = store.acquire("s", ttl=5, key="k1")
    assert lease is not None and lease.standing == store.standing("s", "k1")
    assert lease.standing.keyed == (1, first)
    said = log.event(2, "user_message", text="two")
    snapshot = {**log.snapshot(2, said.seq), "seq": said.seq + 1}
    store.commit("s", [said], snapshot, fence=lease.fence)
    store.release(lease)
    # the next holder reads what the one before it wrote last, not what it read before
    taken = elsewhere.acquire("s", ttl=5)
    assert taken is not None and taken.standing is not None
    assert (taken.standing.seq, taken.standing.keyed) == (said.seq + 1, None)
    elsewhere.release(taken)
    fresh = store.acquire("new", ttl=5, key="k1")  # not stored: nothing stood
    assert fresh is not None and fresh.standing is None


def test_a_deleted_session_leaves_nothing_and_others_stay(store: SessionStore) -> None:
    mine, theirs = Log(store, "s", "ann"), Log(store, "t", "bob")
    mine.turn(1, "hello", key="k")
    theirs.turn(1, "hi")
    assert [i.id for i in store.sessions("ann")] == ["s"]
    assert store.delete("s") is True and store.delete("s") is False
    with pytest.raises(SessionNotFound):
        store.load("s")
    with pytest.raises(SessionNotFound):
        store.events("s")
    assert store.turn_of_key("s", "k") is None and store.checkpoint("s", 1) is None
    assert [i.id for i in store.sessions()] == ["t"] and texts(store.events("t"))[-1] == "re hi"


def test_one_holder_at_a_time_and_a_waiter_gets_it_when_let_go(store: SessionStore) -> None:
    Log(store)
    with store.hold("s"):
        with pytest.raises(SessionBusy), store.hold("s"):
            pass
        started = time.monotonic()
        with pytest.raises(SessionBusy), store.hold("s", wait=0.2):
            pass
        assert 0.15 < time.monotonic() - started < 2
        with store.hold("other"):  # another session is not held
            pass
    got: list[float] = []

    def wait_for_it() -> None:
        with store.hold("s", wait=5):
            got.append(time.monotonic())

    with store.hold("s"):
        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        time.sleep(0.2)
        let_go = time.monotonic()
    waiter.join(5)
    assert got and got[0] >= let_go


def test_a_holder_writes_and_reads_its_session(store: SessionStore) -> None:
    log = Log(store)
    with store.hold("s", wait=1):
        log.turn(1, "one", key="k")
        assert store.load("s").snapshot["turn"] == 1
        assert store.turn_of_key("s", "k") == (1, 1)
    assert texts(store.events("s"))[-1] == "re one"


def test_append_writes_events_ahead_and_keeps_the_snapshot(store: SessionStore) -> None:
    log = Log(store)
    log.turn(1, "one")
    before = store.load("s").snapshot
    intent = log.event(1, "tool_call", status="started")
    store.append("s", [intent])
    assert store.events("s")[-1].data["status"] == "started"
    assert store.load("s").snapshot == before
    with pytest.raises(SessionNotFound):
        store.append("nobody", [log.event(1, "note", text="x")])


def test_a_lease_is_one_holders_and_a_lapsed_one_is_fenced_off(
    store: SessionStore, elsewhere: SessionStore
) -> None:
    log = Log(store)
    first = store.acquire("s", ttl=1.0)
    assert isinstance(first, Lease) and first.fence >= 1
    assert elsewhere.acquire("s", ttl=5) is None and store.acquire("s", ttl=5) is None
    log.turn(1, "one", fence=first.fence)
    time.sleep(1.1)  # lapsed: the next holder takes over with a higher fence
    second = elsewhere.acquire("s", ttl=5)
    assert second is not None and second.fence > first.fence
    with pytest.raises(LeaseLost):  # the lapsed holder carries on: refused, nothing stored
        log.turn(2, "late", fence=first.fence)
    with pytest.raises(LeaseLost):
        store.append("s", [log.event(2, "note", text="x")], fence=first.fence)
    with pytest.raises(LeaseLost):  # nor may a writer without a lease write meanwhile
        Log.turn(log, 2, "no lease")
    with pytest.raises(LeaseLost):
        store.delete("s", fence=first.fence)
    assert texts(store.events("s")) == ["None", "one", "re one"]
    assert store.renew([first], ttl=5) == []
    [renewed] = elsewhere.renew([second], ttl=5)
    assert renewed.fence == second.fence and renewed.expires > second.expires
    log.seq, log.messages = store.events("s")[-1].seq + 1, 2  # the refused writes' are free
    log.turn(2, "two", fence=second.fence)
    elsewhere.release(second)
    third = store.acquire("s", ttl=5)  # let go: free at once
    assert third is not None and third.fence > second.fence
    store.release(third)
    log.turn(3, "three")  # no lease in force: a lease-less writer may write
    assert texts(store.message_events("s", 0, 6)) == [
        "one",
        "re one",
        "two",
        "re two",
        "three",
        "re three",
    ]


def test_a_fence_never_goes_down_also_for_a_session_deleted_and_made_again(
    store: SessionStore,
) -> None:
    Log(store)
    lease = store.acquire("s", ttl=5)
    assert lease is not None
    assert store.delete("s", fence=lease.fence)
    store.release(lease)
    again = store.acquire("s", ttl=5)  # a session not (or no longer) stored may be leased
    assert again is not None and again.fence > lease.fence
    info = SessionInfo("s", "ann", "/g.yaml", "g", "scripted", created_at=1.0)
    first = Event(seq=0, session="s", turn=0, kind="session_started", at=1.0)
    with pytest.raises(LeaseLost):
        store.create(info, {"turn": 0}, [first], fence=lease.fence)
    store.create(info, {"turn": 0}, [first], fence=again.fence)
    assert store.load("s").snapshot == {"turn": 0}


def test_hold_renews_its_lease_and_its_writes_carry_the_fence(
    store: SessionStore, elsewhere: SessionStore
) -> None:
    log = Log(store)
    with store.hold("s", ttl=0.4) as lease:
        for _ in range(4):  # twice the ttl: renewed all along
            time.sleep(0.2)
            assert elsewhere.acquire("s", ttl=5) is None
        log.turn(1, "one")  # the held lease's fence, by default
        with pytest.raises(LeaseLost):
            log.turn(2, "stale", fence=lease.fence - 1)
    taken = elsewhere.acquire("s", ttl=5)
    assert taken is not None and taken.fence > lease.fence


def test_waiters_in_one_process_are_served_first_come_first_served(store: SessionStore) -> None:
    Log(store)
    served: list[int] = []

    def wait_for_it(number: int) -> None:
        with store.hold("s", wait=10):
            served.append(number)
            time.sleep(0.02)

    with store.hold("s"):
        waiters = []
        for number in range(6):
            waiters.append(threading.Thread(target=wait_for_it, args=(number,)))
            waiters[-1].start()
            time.sleep(0.05)  # each in the queue before the next
    for waiter in waiters:
        waiter.join(15)
    assert served == list(range(6))


def delivery(name: str, owner: str = "ann", at: float = 1.0) -> Delivery:
    return Delivery(
        id=f"dlv_{name}", event_id=f"evt_{name}", destination="http://h/x", type="turn.committed",
        owner=owner, body="{}", next_at=at, created_at=at,
    )  # fmt: skip


def test_deliveries_are_kept_with_the_step_that_makes_them_and_only_then(
    store: SessionStore, elsewhere: SessionStore
) -> None:
    log = Log(store, deliveries=[delivery("started")])
    log.turn(1, "one", deliveries=[delivery("one", at=2.0)])
    lease = elsewhere.acquire("s", ttl=30)
    assert lease is not None
    with pytest.raises(LeaseLost):  # a step refused: its deliveries are not kept either
        log.turn(2, "refused", deliveries=[delivery("refused")])
    elsewhere.release(lease)
    log.seq, log.messages = store.events("s")[-1].seq + 1, 2
    with pytest.raises(SessionNotFound):  # no session: nothing to tell of
        store.commit("gone", [], {"turn": 1}, checkpoint=1, deliveries=[delivery("gone")])
    log.turn(2, "two", deliveries=[delivery("one", at=2.0), delivery("two", at=3.0)])
    outbox = elsewhere.outbox()
    try:
        listed = outbox.deliveries("ann", None, 10)
        assert [d.id for d in listed] == ["dlv_two", "dlv_one", "dlv_started"]  # one "one"
        assert outbox.deliveries("bob", None, 10) == []
        claimed = outbox.claim(now=10.0, lease=60.0, limit=2)
        assert {d.id for d in claimed} == {"dlv_started", "dlv_one"}  # the oldest due first
        assert [d.id for d in outbox.claim(now=10.0, lease=60.0, limit=5)] == ["dlv_two"]
        assert outbox.claim(now=10.0, lease=60.0, limit=5) == []  # leased: no one sends twice
        [started] = [d for d in claimed if d.id == "dlv_started"]
        outbox.settle(replace(started, status="delivered", attempts=1, delivered_at=11.0))
        [done] = outbox.deliveries("ann", "delivered", 10)
        assert (done.id, done.attempts, done.delivered_at) == ("dlv_started", 1, 11.0)
        again = outbox.claim(now=71.0, lease=60.0, limit=5)
        assert {d.id for d in again} == {"dlv_one", "dlv_two"}  # a lease run out (its
        # dispatcher died): sent again, at least once
    finally:
        outbox.close()


def test_a_step_whose_events_are_stored_already_writes_nothing_else_either(
    store: SessionStore,
) -> None:
    """The backstop behind the fence: a step carrying an event the log has (a second
    writer's, or one committed twice) is refused whole, its snapshot, checkpoint, keys
    and deliveries with it, not only its events' row."""
    log = Log(store)
    first = log.turn(1, "one")
    again = Event(
        seq=first, session="s", turn=9, kind="user_message", at=3.0,
        data={"text": "again", "msg": 0, "key": "k9"},
    )  # fmt: skip
    with pytest.raises(StoreError, match="already committed"):
        store.commit(
            "s", [again], log.snapshot(9, first), checkpoint=9, deliveries=[delivery("again")]
        )
    with pytest.raises(StoreError, match="already committed"):
        store.append("s", [again])  # events ahead of a step: refused with their key
    loaded = store.load("s")
    assert loaded.snapshot["turn"] == 1 and loaded.info.turn == 1
    assert texts(loaded.events) == ["one", "re one"]
    assert store.checkpoint("s", 9) is None and store.turn_of_key("s", "k9") is None
    outbox = store.outbox()
    try:
        assert outbox.deliveries("ann", None, 10) == []
    finally:
        outbox.close()


class Racing:
    """A store's lease statements, with a renewal that lets `meanwhile` run before the
    store answers it: what a turn ending while its lease is being renewed looks like."""

    def __init__(self, store: SessionStore, meanwhile: Any) -> None:
        self.store, self.meanwhile = store, meanwhile

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None:
        return self.store.acquire(session_id, ttl=ttl, key=key)

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        self.meanwhile()
        return self.store.renew(leases, ttl=ttl)

    def release(self, lease: Lease) -> None:
        self.store.release(lease)


@pytest.mark.parametrize("then", ["let go", "taken again", "lost"])
def test_a_renewal_racing_the_end_of_a_turn_says_lost_only_of_a_lease_still_held(
    store: SessionStore, then: str, caplog: pytest.LogCaptureFixture
) -> None:
    from cgraph.backends.store.leases import Holding

    Log(store)
    holding: Holding
    ended, again, done = threading.Event(), threading.Event(), threading.Event()

    def meanwhile() -> None:
        if then == "lost":  # still held, but the store no longer has it
            store.release(first)
            return
        ended.set()
        turn.join(5)
        if then == "taken again":
            threading.Thread(target=take_again, daemon=True).start()
            assert again.wait(5)

    def take_again() -> None:
        with holding.hold("s", wait=5) as lease:
            taken.append(lease)
            again.set()
            done.wait(5)

    def a_turn() -> None:
        with holding.hold("s", wait=5) as lease:
            firsts.append(lease)
            started.set()
            ended.wait(5)

    holding = Holding(Racing(store, meanwhile), ttl=60)
    firsts: list[Lease] = []
    taken: list[Lease] = []
    started = threading.Event()
    turn = threading.Thread(target=a_turn, daemon=True)
    turn.start()
    assert started.wait(5)
    [first] = firsts
    with caplog.at_level("WARNING", logger="cgraph.store"):
        holding.renew_now()
    said = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
    if then == "lost":
        assert said == [f"session `s`: lease {first.fence} lost"]
        assert holding.fence("s") == first.fence  # kept: the store refuses its writes
        ended.set()
    else:
        assert said == []
    if then == "taken again":
        [second] = taken
        assert second.fence > first.fence and holding.fence("s") == second.fence
        done.set()
    if then == "let go":
        assert holding.fence("s") is None
    turn.join(5)


def read_by_lease(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements the served store's lease takes (each one's first words), as it runs them."""
    from cgraph.backends.store import postgres_loop

    ran: list[str] = []
    rows = postgres_loop.rows

    async def counted(conn: Any, query: str, args: Any) -> list[Any]:
        ran.append(" ".join(query.split()[:2]))
        return await rows(conn, query, args)

    monkeypatch.setattr(postgres_loop, "rows", counted)
    return ran


@pytest.mark.slow
def test_a_served_lease_taken_again_after_its_own_reads_the_session_in_its_one_statement(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cgraph.backends.store.postgres import PostgresStore

    store = Awaiting(PostgresStore(pg_url))
    try:
        log = Log(store)  # type: ignore[arg-type]  # written without a lease: fences taken
        ran = read_by_lease(store, monkeypatch)
        first = store.acquire("s", ttl=5)  # after a write without a lease: read again
        assert first is not None and first.fence > 1 and first.standing is not None
        seq = log.turn(1, "one", key="k1", fence=first.fence)
        store.release(first)
        again = store.acquire("s", ttl=5, key="k1")  # after its own: nobody between
        assert again is not None and again.fence == first.fence + 1
        assert again.standing == store.standing("s", "k1") and again.standing.keyed == (1, seq)
        store.release(again)
        assert store.acquire("t", ttl=5) is not None  # the first of a session never written
        # each lease taken with its standing in one trip, but the one after another writer
        assert ran == ["WITH taken", "SELECT s.created_at,", "WITH taken", "WITH taken"]
    finally:
        store.close()


@pytest.mark.slow
def test_a_served_lease_taken_as_another_holder_lets_go_reads_what_that_holder_wrote(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease's statement waits on the row another holder is letting go of, and that
    holder's last write commits with its release: after the statement began, so the
    statement's own read misses it and the lease reads the session again."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    from cgraph.backends.store.postgres import PostgresStore

    store, other = Awaiting(PostgresStore(pg_url)), PostgresStore(pg_url)
    try:
        Log(store)  # type: ignore[arg-type]
        mine = store.acquire("s", ttl=5)
        assert mine is not None
        store.release(mine)
        theirs = other.acquire("s", ttl=5)
        assert theirs is not None
        ran = read_by_lease(store, monkeypatch)
        with (
            psycopg.connect(pg_url) as conn,
            psycopg.connect(pg_url, autocommit=True) as watch,  # a fresh view at each look
            ThreadPoolExecutor(1) as pool,
        ):
            conn.execute("UPDATE cgraph_leases SET holder = NULL WHERE id = 's'")  # row locked
            taking = pool.submit(store.acquire, "s", ttl=5, key="k9")
            deadline = time.monotonic() + 10
            while not watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database() AND query LIKE '%INSERT INTO cgraph_leases%'"
            ).fetchone()[0]:  # type: ignore[index]  # the lease's statement waits on the row
                assert time.monotonic() < deadline and not taking.done()
                time.sleep(0.01)
            conn.execute(
                "INSERT INTO cgraph_keys (sid, turn, seq, key) "
                "SELECT key, 1, 7, 'k9' FROM cgraph_sessions WHERE id = 's'"
            )
            conn.commit()
            taken = taking.result(timeout=10)
        assert taken is not None and taken.fence == theirs.fence + 1
        assert taken.standing is not None and taken.standing.keyed == (1, 7)
        assert ran == ["WITH taken", "SELECT s.created_at,"]
    finally:
        store.close()
        other.close()


def waiting_on_the_lease_row(watch: Any, job: Future[Any]) -> None:
    """Return once a statement waits for a lock on a lease's row (`watch`: a connection of
    its own), within 10 s and before `job`, which runs that statement, is done."""
    deadline = time.monotonic() + 10
    while not watch.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        " AND datname = current_database() AND query LIKE '%INSERT INTO cgraph_leases%'"
    ).fetchone()[0]:
        assert time.monotonic() < deadline and not job.done()
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("served", [False, True], ids=["blocking", "served"])
@pytest.mark.parametrize("leased_before", [True, False], ids=["leased before", "never leased"])
def test_a_lease_waits_for_a_write_without_a_lease_that_began_before_it(
    pg_url: str, served: bool, leased_before: bool
) -> None:
    """A write with no lease (the library without `hold`) is let through while no lease is
    in force, and holds the lease's row (made if the session has none) until it commits:
    a holder taking the session meanwhile, blocking or served, waits for it, and its
    standing has that write (the write took a fence: the lease is not trusted to follow
    its store's own)."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    from cgraph.backends.store.packing import pack
    from cgraph.backends.store.postgres import PostgresStore
    from cgraph.backends.store.postgres_steps import FENCED

    plain = PostgresStore(pg_url)
    store: Any = Awaiting(plain) if served else plain
    sid = f"s-{served}-{leased_before}"
    try:
        with psycopg.connect(pg_url, autocommit=True) as setup:
            setup.execute(
                "INSERT INTO cgraph_sessions (id, user_id, graph, graph_name, model, created_at,"
                " updated_at, snapshot, turn_seq) VALUES (%s, 'ann', '/g', 'g', 'm', 1, 1,"
                " %s, 0)",
                (sid, pack({"turn": 0})),
            )
        if leased_before:
            lease = store.acquire(sid, ttl=5)
            assert lease is not None
            store.release(lease)  # the row is there, no lease in force
        with (
            psycopg.connect(pg_url) as conn,
            psycopg.connect(pg_url, autocommit=True) as watch,
            ThreadPoolExecutor(1) as pool,
        ):
            ok = conn.execute(FENCED + " SELECT ok FROM ok", {"sid": sid, "fence": None})
            assert ok.fetchone() == (True,)  # the write may go: its transaction is open
            taking = pool.submit(store.acquire, sid, ttl=5, key="k9")
            waiting_on_the_lease_row(watch, taking)  # the lease waits on the write
            conn.execute(
                "INSERT INTO cgraph_keys (sid, turn, seq, key) "
                "SELECT key, 1, 7, 'k9' FROM cgraph_sessions WHERE id = %s",
                (sid,),
            )
            conn.commit()
            taken = taking.result(timeout=10)
        assert taken is not None and taken.fence == (lease.fence + 2 if leased_before else 2)
        assert taken.standing is not None and taken.standing.keyed == (1, 7)
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("write", ["step", "append"])
@pytest.mark.parametrize("served", [False, True], ids=["blocking", "served"])
def test_a_step_that_waits_for_a_delete_finds_the_session_gone(
    pg_url: str, served: bool, write: str
) -> None:
    """A step (or events written ahead of one) whose statement began before a delete of
    its session committed (both without a lease: the delete holds the lease's row, the
    write waits for it) is told the session is gone, not that its events were committed
    already, and leaves no row: its own snapshot still shows the session."""
    from concurrent.futures import ThreadPoolExecutor

    import psycopg

    from cgraph.backends.store.postgres import _DELETE, PostgresStore

    plain = PostgresStore(pg_url)
    store: Any = Awaiting(plain) if served else plain
    sid = f"gone-{served}-{write}"
    try:
        log = Log(store, session=sid)
        log.turn(1, "one")
        ahead = [log.event(2, "note", text="ahead")]
        with (
            psycopg.connect(pg_url) as conn,
            psycopg.connect(pg_url, autocommit=True) as watch,
            ThreadPoolExecutor(1) as pool,
        ):
            deleted = conn.execute(_DELETE, {"sid": sid, "fence": None}).fetchone()
            assert deleted == (1, True)  # the delete's transaction is open
            stepping = (
                pool.submit(log.turn, 2, "two")
                if write == "step"
                else pool.submit(store.append, sid, ahead)
            )
            waiting_on_the_lease_row(watch, stepping)  # the write waits on the delete
            conn.commit()
            with pytest.raises(SessionNotFound):
                stepping.result(timeout=10)
        with pytest.raises(SessionNotFound):
            store.load(sid)
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM cgraph_log l WHERE NOT EXISTS"
                " (SELECT 1 FROM cgraph_sessions s WHERE s.key = l.sid)"
            )
            assert rows.fetchone() == (0,)  # no row of a session no longer there
    finally:
        store.close()
