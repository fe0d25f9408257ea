"""What each endpoint does, as calls of the library: `Session` (start, resume, send,
stream, undo, delete) on the store and memories `cgraph.wiring` opens. No second engine:
a request opens its session from the store the way `cgraph run --session` does, under the
store's lease of the session (`SessionStore.hold`), so two turns of one session never
interleave, whichever process runs them, and a turn a killed process left unfinished is
finished by the next request that writes to the session (`Sessions.resume(finish=True)`,
its `recovered` turn returned as `recovered_turn`).

Whatever writes to a session (`acreate`, `asend`, `astream`, `aundo`, `adelete`) runs on
the event loop with the library's async driver: a model is awaited, so a turn waiting on
it holds no thread; a lease holds no connection (the store lends one per statement). A
store that can await its statements (PostgreSQL, `serve_on`) takes the lease and commits
the turn on the loop too; opening a session, the other store statements (all of a
SQLite store's), recalls and tools run in a small pool (`pool`). `create`, `send`, `undo`
and `delete` are those same calls for a caller in a thread (the studio), run on the
server's loop. The reads (`view`, `events`, `sessions`, memories) are short store
statements the app runs in a worker thread.

Every call takes a session id as its client names it; the store keeps it per user
(`cgraph.serve.ids`), and every answer names the session by the client's id again.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    nullcontext,
)
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from cgraph.errors import ConfigError, SessionBusy, SessionQuota
from cgraph.serve.graphs import Served, load_served, unknown
from cgraph.serve.ids import client_id, scoped
from cgraph.serve.limits import Rate
from cgraph.serve.opening import Opening
from cgraph.serve.options import ServeOptions
from cgraph.serve.problems import Problem
from cgraph.serve.queues import Queues
from cgraph.serve.watch import Seen, Watch
from cgraph.session import (
    CallingTools,
    Chunk,
    Delta,
    Lease,
    Retracted,
    Session,
    SessionInfo,
    Sessions,
    ToolRunner,
    Turn,
    awaited,
)
from cgraph.wiring.memories import open_memory_store
from cgraph.wiring.stores import is_url, open_store

T = TypeVar("T")
Emit = Callable[[str, dict[str, Any]], None]
"""Where a streamed turn goes: (event name, its JSON data)."""
PROBE_USER = "-readyz-"
"""A user no token can name: what `/readyz` asks the stores about."""
MAX_EVENTS_PAGE = 1000


class Service:
    """The served graphs, the session store and the memories, and the calls on them."""

    def __init__(self, options: ServeOptions, served: dict[str, Served] | None = None) -> None:
        self.options = options
        self.served = (
            served
            if served is not None
            else load_served(options.graphs, options.trust, options.limits)
        )
        self.store = open_store(options.store, sessions_per_user=options.sessions_per_user)
        self.folder = None if is_url(options.store) else _folder(Path(options.store))
        _refuse_one_process_memory(options, self.served, self.store.shared, self.folder)
        self.memories = {
            name: open_memory_store(s.graph, options.memory, self.folder)
            for name, s in self.served.items()
        }
        self.rate = Rate(options.turns_per_minute)
        self.opening = Opening(self.served, self.opener)
        """The sessions kept open between requests, and how the others are opened."""
        self.tools = ToolRunner()
        """One runner for every session: its idle tool workers serve them all."""
        self.pool = ThreadPoolExecutor(options.threads, thread_name_prefix="cgraph-serve")
        """Where a turn on the event loop runs its short blocking work: store statements,
        the session's lock, recalls and tools (`--threads` of them)."""
        self.queues = Queues()
        """The messages waiting on each session here, first come, first served."""
        self.watch = Watch()
        """Who is told of each turn (the log; the app adds metrics, traces, webhooks)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The server's event loop, once it runs (where a caller in a thread runs a turn)."""

    # ----- sessions -----------------------------------------------------------------------

    async def acreate(self, user: str, graph: str, session_id: str | None) -> dict[str, Any]:
        """A new session (and the first turn of a graph that speaks first, awaited as a
        message's turn is)."""
        served = self.served.get(graph)
        if served is None:
            raise Problem(422, "unknown_graph", unknown(graph, self.served))
        self.rate.take(user)
        sid = session_id or uuid.uuid4().hex
        with self.watch.turn(user, sid) as seen, scoped(user, sid) as kept:
            async with _created_under(self, kept, served, session_id):
                seen.graph = graph if served.graph.speaks_first else ""
                # the store counts the quota and creates as one; a create it refuses starts
                # no turn, which the rate does not count
                with self.rate.refunded(user, SessionQuota):
                    session = await self.opener(graph).astart(
                        served.graph, pool=self.pool, user_id=user, session_id=kept
                    )
                self.watch.started(graph, sid, user)
                state = session.view.state
                answer: dict[str, Any] = {"session": sid, "graph": graph, "state": state}
                if session.opening is not None:
                    seen.done(session.opening, session)
                    answer["turn"] = _json(session.opening, session)
                self.opening.keep(session)  # its first message finds it open
                return answer

    async def asend(self, user: str, sid: str, text: str, key: str | None) -> dict[str, Any]:
        """A message's turn on the event loop (the async driver): the model awaited, so a
        turn waiting on it holds no thread; opening the session, the lease and every store
        statement, recall and tool run in the service's small pool."""
        with self.watch.turn(user, sid) as seen, scoped(user, sid) as kept:
            async with self._aheld(kept, key) as lease:
                session, found = await _taken(self.opening, self.pool, user, kept, key, lease)
                if found is not None:
                    self.opening.keep(session)
                    return _turn(replayed(found, text), session, replayed=True)
                self.rate.take(user)  # a turn runs: what the rate counts
                seen.open(session)
                turn = await session.asend(text, key=key, pool=self.pool)
                seen.done(turn, session)
                self.opening.keep(session)
                return _turn(turn, session)

    async def astream(self, user: str, sid: str, text: str, key: str | None, emit: Emit) -> None:
        """`asend`, each piece emitted as it comes: `open` once the session is held and
        open (nothing before it was said to the client), `delta`s, `retracted`, `tools`,
        then one `turn`."""
        with self.watch.turn(user, sid) as seen, scoped(user, sid) as kept:
            async with self._aheld(kept, key) as lease:
                session, found = await _taken(self.opening, self.pool, user, kept, key, lease)
                if found is None:
                    self.rate.take(user)
                else:
                    replayed(found, text)
                emit("open", {})
                if found is not None:
                    self.opening.keep(session)
                    emit("turn", _turn(found, session, replayed=True))
                    return
                seen.open(session)
                async for item in session.astream(text, key=key, pool=self.pool):
                    _emitted(item, session, seen, emit)
                self.opening.keep(session)

    async def aundo(self, user: str, sid: str) -> dict[str, Any]:
        with scoped(user, sid) as kept:
            async with self._aheld(kept) as lease:
                session, _ = await _taken(self.opening, self.pool, user, kept, None, lease)
                self.rate.take(user)
                taken = await session.aundo(pool=self.pool)
                self.opening.keep(session)
                undone = _json(taken, session) if taken is not None else None
                view = session.view
                return {"undone": undone, "state": view.state, "turn": view.turn_number}

    async def adelete(self, user: str, sid: str) -> None:
        """The session's log and its task memories (in its graph's memory store, when that
        graph is served here; the user's personal and project memories stay)."""
        with scoped(user, sid) as kept:
            async with self._aheld(kept):
                await _in_pool(self.pool, self._deleted, user, kept)

    def _deleted(self, user: str, sid: str) -> None:
        self.opening.drop(sid)
        name = self.opener().info(sid, user_id=user).graph_name
        self.opener(name if name in self.memories else None).delete(sid, user_id=user)

    def serve_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """The server's loop, from its start: where the thread-side calls run their turns,
        and a store that can await its statements awaits them (`stopped` at its end)."""
        self.loop = loop
        if hasattr(self.store, "serve_on"):
            self.store.serve_on(loop)

    async def stopped(self) -> None:
        if (store := awaited(self.store)) is not None:
            await store.aclose()

    # ----- the same calls, from a thread ----------------------------------------------------

    def create(self, user: str, graph: str, session_id: str | None) -> dict[str, Any]:
        """`acreate` for a caller in a thread (the studio's, a test's)."""
        return self._blocking(self.acreate, user, graph, session_id)

    def send(self, user: str, sid: str, text: str, key: str | None) -> dict[str, Any]:
        """`asend` for a caller in a thread."""
        return self._blocking(self.asend, user, sid, text, key)

    def undo(self, user: str, sid: str) -> dict[str, Any]:
        return self._blocking(self.aundo, user, sid)

    def delete(self, user: str, sid: str) -> None:
        self._blocking(self.adelete, user, sid)

    def _blocking(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """`await function(*args)` from a thread: on the server's loop while it runs (so
        every model client stays on the one loop), else on a loop of its own. Called on
        the loop itself, it would wait on itself: refused."""
        loop = self.loop
        if loop is not None and loop.is_running():
            if _on(loop):
                raise RuntimeError("a blocking call of the service on its own event loop")
            return asyncio.run_coroutine_threadsafe(function(*args), loop).result()
        return asyncio.run(function(*args))

    @asynccontextmanager
    async def _aheld(self, sid: str, key: str | None = None) -> AsyncIterator[Lease]:
        """The session's lease within `--wait` seconds (the wait counted): first the head of
        this process's queue for it, waited for on the loop in the order the messages came,
        then the store's lease (`_holding`), held in between by no thread. The lease
        carries where the session stood (and `key`'s turn)."""
        clock, queued = time.perf_counter(), False
        try:
            async with self.queues.first(sid, self.options.wait) as left:
                queued = True
                held = _holding(self, sid, left, key, since=clock)
                async with held as lease:
                    yield lease
        except SessionBusy:
            if not queued:
                self.watch.gave_up(clock)
            raise

    def view(self, user: str, sid: str) -> dict[str, Any]:
        return _viewed(self.opened(user, sid), sid)

    async def aview(self, user: str, sid: str) -> dict[str, Any]:
        """`view` from the event loop (a read, in the pool)."""
        return await _in_pool(self.pool, self.view, user, sid)

    def events(self, user: str, sid: str, after: int, limit: int) -> dict[str, Any]:
        session = self.opened(user, sid)
        found = session.log.events(after=after, limit=min(limit, MAX_EVENTS_PAGE))
        events = [{**e.model_dump(mode="json"), "session": sid} for e in found]
        return {"events": events, "next": found[-1].seq if found else None}

    def sessions(self, user: str) -> dict[str, Any]:
        return {"sessions": [_listed(i, client_id(user, i.id)) for i in self.opener().list(user)]}

    def opened(self, user: str, sid: str) -> Session:
        """`user`'s session `sid` as stored, to read: a turn left unfinished stays so."""
        with scoped(user, sid) as kept:
            return self.opening.stored(user, kept, finish=False)

    def opener(self, graph: str | None = None) -> Sessions:
        """The sessions of the store, opened with `graph`'s memory store (and the served
        model and tool runner); with no graph, to list, describe and delete them."""
        memory = self.memories[graph] if graph is not None else None
        options = self.options
        return Sessions(
            self.store,
            memory=memory,
            model=options.model,
            api_base=options.api_base,
            tools=self.tools,
            announce=self.watch.announce,
        )

    # ----- memories, graphs, readiness ----------------------------------------------------

    def memories_of(self, user: str) -> dict[str, Any]:
        found: dict[str, dict[str, Any]] = {}
        for memory in self.memories.values():
            for m in memory.list(user):
                shown = {**asdict(m), "session_id": client_id(user, m.session_id)}
                found.setdefault(m.id, {k: v for k, v in shown.items() if k != "score"})
        return {"memories": sorted(found.values(), key=lambda m: m["created_at"])}

    def forget(self, user: str, memory_id: str | None) -> dict[str, Any]:
        ids = None if memory_id is None else [memory_id]
        deleted = sum(memory.delete(user, ids) for memory in self.memories.values())
        if memory_id is not None and not deleted:
            raise Problem(404, "not_found", f"no memory `{memory_id}`")
        return {"deleted": deleted}

    def serve_graph(self, served: Served, replacing: str | None = None) -> None:
        """Serve `served` under its name from now on (a graph file edited and linted again),
        instead of graph `replacing` if given: sessions opened after this run on it, and
        the sessions kept open are let go."""
        name = served.graph.name
        if replacing is not None and replacing != name:
            self.served.pop(replacing, None)
        self.served[name] = served
        if name not in self.memories:
            self.memories[name] = open_memory_store(served.graph, self.options.memory, self.folder)
        self.opening.let_go()

    def graphs(self) -> dict[str, Any]:
        return {"graphs": [s.as_json() for s in self.served.values()]}

    def ready(self) -> dict[str, Any]:
        """Asks the store and each memory something (raises when one cannot answer)."""
        self.store.sessions(PROBE_USER)
        for memory in self.memories.values():
            memory.count(PROBE_USER)
        return {"ready": True}


async def _taken(
    opening: Opening, pool: Executor, user: str, sid: str, key: str | None, lease: Lease
) -> tuple[Session, Turn | None]:
    """`Opening.taken`: on the loop when the lease's read settles it, else in the pool."""
    session = opening.current(user, sid, lease.standing)
    if session is not None:
        return session, None
    return await _in_pool(pool, opening.taken, user, sid, key, lease.standing)


async def _in_pool(pool: Executor, function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in `pool`, in this task's context (its watchers)."""
    context = contextvars.copy_context()
    call = partial(context.run, function, *args)
    return await asyncio.get_running_loop().run_in_executor(pool, call)


def _created_under(
    service: Service, sid: str, served: Served, session_id: str | None
) -> AbstractAsyncContextManager[Lease | None]:
    """What a create holds. Under an id it mints, of a graph that does not speak first, one
    statement no other write can come between: nothing (two statements fewer). Else the
    session's lease: an id the client names may be another request's meanwhile (the
    create waits for it rather than being refused), and a graph that speaks first runs
    its opening turn once its session is listed (a message sent then waits for it)."""
    minted = session_id is None and not served.graph.speaks_first
    return nullcontext() if minted else service._aheld(sid)


def _holding(
    service: Service, sid: str, wait: float, key: str | None, since: float
) -> AbstractAsyncContextManager[Lease]:
    """The store's lease of `sid`: its statements awaited on the loop when the store can
    (PostgreSQL, served), else taken and let go in the service's pool."""
    ttl, watch = service.options.lease, service.watch
    store = awaited(service.store)
    if store is not None:
        return watch.aheld(store.ahold(sid, wait=wait, ttl=ttl, key=key), since=since)
    hold = service.store.hold(sid, wait=wait, ttl=ttl, key=key)
    return _held(service.pool, watch.held(hold, since=since))


@asynccontextmanager
async def _held(pool: Executor, held: AbstractContextManager[T]) -> AsyncIterator[T]:
    """`held` entered and exited in `pool`, held in between by no thread."""
    value = await _in_pool(pool, held.__enter__)
    try:
        yield value
    except BaseException as error:
        if not await _in_pool(pool, held.__exit__, type(error), error, error.__traceback__):
            raise
    else:
        await _in_pool(pool, held.__exit__, None, None, None)


def _refuse_one_process_memory(
    options: ServeOptions, served: dict[str, Served], shared: bool, folder: Path | None
) -> None:
    """`ConfigError` when a served graph would keep its memories in the embedded Chroma,
    which is one process's, while other processes serve its sessions too (or its store,
    a URL, has no folder to keep it in)."""
    embedded = [n for n, s in served.items() if not s.graph.memory.host]
    if options.memory is not None or not embedded:
        return
    if options.workers > 1 or shared or folder is None:
        raise ConfigError(
            "the embedded Chroma memory is one process's; with --workers > 1 or a "
            "PostgreSQL store give --memory chroma://HOST:PORT (a Chroma server) or "
            f"--memory off (graphs without a memory server: {', '.join(sorted(embedded))})"
        )


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _emitted(item: Chunk | Turn, session: Session, seen: Seen, emit: Emit) -> None:
    """A streamed turn's piece as its server-sent event."""
    if isinstance(item, Delta):
        emit("delta", {"text": item.text})
    elif isinstance(item, Retracted):
        emit("retracted", {"shown": item.shown, "failed": item.failed})
    elif isinstance(item, CallingTools):
        emit("tools", {"names": list(item.names)})
    elif isinstance(item, Turn):
        seen.done(item, session)
        emit("turn", _turn(item, session))


def replayed(found: Turn, text: str) -> Turn:
    """The turn an idempotency key made, sent again with the same text; another text under
    the same key is refused (`key_reused`), never dropped without a word."""
    if found.user != text:
        raise Problem(
            422,
            "key_reused",
            f"key already sent with another message (turn {found.number}); use a new key",
        )
    return found


def _turn(turn: Turn, session: Session, *, replayed: bool = False) -> dict[str, Any]:
    """The turn object of `cgraph run --jsonl`, marked when it is the stored turn of an
    idempotency key sent again, with the turn this request's opening finished."""
    answer = _json(turn, session)
    if replayed:
        answer["replayed"] = True
    if session.recovered is not None and session.recovered.number != turn.number:
        answer["recovered_turn"] = _json(session.recovered, session)
    return answer


def _json(turn: Turn, session: Session) -> dict[str, Any]:
    """`turn.as_json()`, naming its session as its user does."""
    return {**turn.as_json(), "session": client_id(session.user_id, turn.session)}


def _viewed(session: Session, sid: str) -> dict[str, Any]:
    view = session.view
    return {
        "session": sid,
        "graph": session.graph.name,
        "state": view.state,
        "turn": view.turn_number,
        "completed": view.completed,
        "pending": view.interrupted,
        "variables": view.variables,
        "transcript": list(view.transcript),
    }


def _listed(info: SessionInfo, sid: str) -> dict[str, Any]:
    return {
        "session": sid,
        "graph": info.graph_name,
        "turn": info.turn,
        "state": info.state,
        "completed": info.completed,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
    }


def _folder(store: Path) -> Path:
    """The folder beside a store's sessions: the folder itself, or a file's."""
    return store.parent if store.suffix in (".sqlite", ".db", ".sqlite3") else store
