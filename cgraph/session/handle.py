"""A running conversation, and the sessions of one store.

    graph = cgraph.load_graph("graphs/medical_checkin.yaml")
    sessions = Sessions(".cgraph", model="semantic")
    session = sessions.start(graph, user_id="ann")
    turn = session.send("Hi, I'm ready")
    turn.reply, turn.path, turn.transitions
    session.view.state, session.view.variables, session.log.turns()
    ...
    session = sessions.resume(session.id)

`Sessions` is bound to a store, a memory store and how models are resolved; it starts,
resumes, lists, describes and deletes sessions, and opens every session by one path, from
its record, state and events (a new session is one resumed from its first snapshot).
`Session` is the turn handle: `send`, `stream`, `finish_turn`, `cancel_turn`, `undo`, each
returning a `Turn`; what it shows is a frozen `SessionView` (`view`) and its log
(`log`). Memory extraction is an after-turn hook (`cgraph.runtime.turn.after`).

Every step of a turn is committed to the store before the next one runs. If the process
dies mid-turn, `Sessions.resume` finishes the interrupted turn from its last committed step
(`session.recovered` is that turn); Ctrl-C during `send` cancels the turn instead, leaving
the session as it was before the message (the engine's own recovery).
"""

from __future__ import annotations

import asyncio
import builtins
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from concurrent.futures import Executor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from cgraph.errors import (
    CgraphError,
    ConfigError,
    NotTheOwner,
    SessionCompleted,
    SessionError,
    SessionNotFound,
)
from cgraph.runtime.ask.streaming import Chunk, Delta, can_stream, run_streamed, streamed
from cgraph.runtime.log.reading import build_turn
from cgraph.runtime.log.snapshots import read_snapshot
from cgraph.runtime.needs import DRIVER, Steps, drive_async, in_pool
from cgraph.runtime.ports import (
    Announcer,
    ChatModel,
    ExitChooser,
    Memory,
    MemoryStore,
    NullMemory,
    SessionInfo,
    SessionStore,
)
from cgraph.runtime.state.records import Decision, Event, TransitionRecord, Turn
from cgraph.runtime.state.snapshot import LogPosition, SessionState
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.runtime.turn.after import Policy, Remembering
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.runtime.turn.engine import Engine, Sink
from cgraph.session.log import SessionLog
from cgraph.session.view import SessionView, view_of
from cgraph.spec.limits import check_message, text_problem
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import END, START
from cgraph.wiring.compose import (
    FIRST,
    create,
    graph_of,
    initial_state,
    prepare,
    session_models,
)
from cgraph.wiring.stores import open_store

T = TypeVar("T")
Model = ChatModel | ExitChooser | str | None


def _warn(old: str, new: str, depth: int = 3) -> None:
    """Warn that `Session.old` is deprecated (pointing at the caller's line)."""
    warnings.warn(f"Session.{old} is deprecated; use {new}", DeprecationWarning, stacklevel=depth)


def _moved(part: str, name: str, *, call: bool = False, method: bool = False) -> Any:
    """A deprecated accessor (a property, or a `method`) that now lives on the session's
    `view` or `log` (there a method to `call`)."""
    new = f"{part}.{name}" + ("()" if call else "")

    def read(session: Session, *args: Any, **kwargs: Any) -> Any:
        _warn(name, new)
        found = getattr(getattr(session, part), name)
        return found(*args, **kwargs) if call else found

    read.__doc__ = f"Deprecated: `{new}`."
    return read if method else property(read, doc=read.__doc__)


class Session:
    """One conversation with a graph, checkpointed at every step: the turn handle.

    Opened by `Sessions` (`start`, `resume`); `view` is what it shows now, `log` its turns
    and events.
    """

    def __init__(self, info: SessionInfo, engine: Engine, remembering: Remembering) -> None:
        deps = engine.deps
        self.id, self.user_id, self.graph, self.info = info.id, info.user_id, deps.graph, info
        self.model, self.memory, self.store, self.deps = deps.model, deps.memory, deps.store, deps
        self.log, self.remembering = SessionLog(info, engine, deps.store), remembering
        """Its turns, events and audit, read from the log; its after-turn memory hook."""
        self.recovered: Turn | None = None
        """The turn an interrupted process left unfinished, completed by `resume`."""
        self.dropped: str | None = None
        """Why a turn the previous process left unfinished was cancelled on resume instead
        (its message cannot be stored, or finishing it failed in cgraph itself): a turn
        that can never be finished is dropped once, never retried on every resume."""
        self.opening: Turn | None = None
        """The first turn of a graph that `speaks_first`, taken by `start` (user None)."""
        self._engine = engine

    @property
    def view(self) -> SessionView:
        """What the session shows now (state, variables, transcript, …), frozen."""
        return view_of(self.id, self._engine)

    # ----- turns --------------------------------------------------------------------------

    def send(self, message: str, *, key: str | None = None, remember: bool = True) -> Turn:
        """Run one user turn; raises `SessionCompleted` after END.

        `key` is stored with the message so that a client re-sending it after a crash can
        find the turn it already made (`log.with_key`) instead of making a second one.

        With `remember=False` the turn is returned as soon as its reply is committed, and
        the after-turn memory hook is left to the front end (`remember()`, once the reply
        is shown), else it runs before the next turn, at `close()` or on resume. A message
        that cannot be stored (see `cgraph.spec.limits.check_message`) raises `InputError`
        before anything runs.
        """
        return self._drive(self._sending(message, key, remember, None))

    def _sending(
        self, message: str, key: str | None, remember: bool, sink: Sink | None
    ) -> Steps[Turn]:
        """`send` as steps (`cgraph.runtime.needs`), for either driver."""
        check_message(message, key)
        yield from self.remembering.before_turn()
        state = self._engine.state
        if state.completed:
            raise SessionCompleted(
                f"session `{self.id}` reached END at turn {state.turn}; "
                "start a new session to talk again"
            )
        if state.pending is not None:
            raise SessionError(
                f"turn {state.turn} of session `{self.id}` was interrupted; "
                "call finish_turn() to complete it or cancel_turn() to drop it"
            )
        yield from self._engine.turn(message, key=key, sink=sink)
        if remember:
            yield from self.remembering.after_turn()
        return self.log.turn(self._engine.state.turn)

    def stream(
        self, message: str, *, key: str | None = None, remember: bool = True
    ) -> Iterator[Chunk | Turn]:
        """`send`, yielding the reply as the model writes it: `Delta`s of its text (and a
        `Retracted` when an answer shown so far was rejected and the model is asked
        again), then the `Turn`. With a model that cannot stream (offline, scripted without
        `stream`), the whole reply comes as one `Delta` once the turn is done."""
        if not can_stream(self.deps.chat):
            turn = self.send(message, key=key, remember=remember)
            yield from ((Delta(turn.reply), turn) if turn.reply else (turn,))
            return
        yield from run_streamed(
            lambda sink: self.send_streaming(message, sink, key=key, remember=remember)
        )

    def send_streaming(
        self,
        message: str,
        on_chunk: Callable[[Chunk], None],
        *,
        key: str | None = None,
        remember: bool = True,
    ) -> Turn:
        """`send`, calling `on_chunk` in this thread with the reply's pieces as the model
        writes them (see `stream`); a terminal prints them as they come, and Ctrl-C still
        cancels the turn as it does during `send`."""
        sink = on_chunk if can_stream(self.deps.chat) else None
        return self._drive(self._sending(message, key, remember, sink))

    async def asend(
        self,
        message: str,
        *,
        key: str | None = None,
        remember: bool = True,
        pool: Executor | None = None,
    ) -> Turn:
        """`send` on an event loop (the async driver, `cgraph.runtime.needs`): the same
        steps, the model awaited, so a turn waiting on it holds no thread; store
        statements, recalls and tools run in `pool` (None: the loop's default)."""
        return await drive_async(self._sending(message, key, remember, None), in_pool(pool))

    async def astream(
        self,
        message: str,
        *,
        key: str | None = None,
        remember: bool = True,
        pool: Executor | None = None,
    ) -> AsyncIterator[Chunk | Turn]:
        """`stream` on an event loop, as `asend` runs `send`. The turn runs in a task of its
        own: a caller that stops reading does not stop it (it is committed)."""
        if not can_stream(self.deps.chat):
            turn = await self.asend(message, key=key, remember=remember, pool=pool)
            if turn.reply:
                yield Delta(turn.reply)
            yield turn
            return
        offload = in_pool(pool)
        steps = lambda sink: drive_async(self._sending(message, key, remember, sink), offload)  # noqa: E731
        async for item in streamed(steps):
            yield item

    def speak_first(self) -> Turn:
        """The start state's words before the user types (`speaks_first: true`)."""
        return self._drive(_speaking_first(self, self._engine))

    def finish_turn(self) -> Turn:
        """Complete an interrupted turn from its last committed step (and extract its
        memories: a recovered turn's reply was never shown, so nothing waits for it)."""
        return self._drive(self._finishing())

    def _finishing(self) -> Steps[Turn]:
        if self._engine.state.pending is None:
            raise SessionError(f"session `{self.id}` has no interrupted turn")
        yield from self._engine.finish()
        yield from self.remembering.now()
        return self.log.turn(self._engine.state.turn)

    def cancel_turn(self) -> None:
        """Drop a turn in progress: the session is as it was before its message."""
        state = self._engine.state
        if state.pending is not None:
            self._drive(self._engine.rewind(state.turn, cancelled=True))

    def undo(self) -> Turn | None:
        """Take back the last turn (state, variables, notes, transcript); returns it."""
        return self._drive(_undoing(self, self._engine))

    async def aundo(self, *, pool: Executor | None = None) -> Turn | None:
        """`undo` on an event loop, as `asend` runs `send`."""
        return await drive_async(_undoing(self, self._engine), in_pool(pool))

    # ----- memories -----------------------------------------------------------------------

    def remember(self) -> None:
        """Run the after-turn memory hook now, with the session's policy (a front end that
        sent with `remember=False` calls it once the reply is shown)."""
        self._drive(self.remembering.after_turn())

    def extract_memories(self) -> Turn | None:
        """Extract the latest turn's memories now if they are due and not extracted yet
        (see the graph's `memory.store`), waiting for what the background still asks;
        returns that turn, now with its `memory_calls`."""
        extracted = self._drive(self.remembering.now())
        return self.log.turn(self._engine.state.turn) if extracted else None

    def memories(self, query: str | None = None) -> list[Memory]:
        """What this session knows of its user: their memories (task-tier ones only this
        session's), or those most similar to `query`."""
        self.extract_memories()
        mine = self.id
        if query:
            top_k = self.graph.memory.top_k
            return self.memory.recall(self.user_id, [query], top_k=top_k, session_id=mine)
        return self.memory.list(self.user_id, session_id=mine)

    def close(self) -> None:
        """Extract what is due, stop the tool workers, then close the session store; the
        session is kept and can be resumed later."""
        try:
            self.extract_memories()
        finally:
            self.deps.tools.close()
        self.store.close()

    def _drive(self, steps: Steps[T]) -> T:
        """The library's blocking calls run their steps with the blocking driver (a test
        runs them again with the async one: `cgraph.runtime.needs.DRIVER`)."""
        return DRIVER.get()(steps)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, user={self.user_id!r}, state={self._engine.qualified()!r})"

    # ----- the names the first guide published, deprecated (each warns once used) --------

    @classmethod
    def start(cls, graph: Graph | str | Path, **options: Any) -> Session:
        """Deprecated: `Sessions(store, memory=…, api_base=…, clock=…, tools=…).start(…)`."""
        opener, rest = _opener("start", options)
        return opener.start(graph, **rest)

    @classmethod
    def resume(cls, session_id: str, **options: Any) -> Session:
        """Deprecated: `Sessions(store, memory=…, api_base=…, clock=…, tools=…).resume(…)`."""
        opener, rest = _opener("resume", options)
        return opener.resume(session_id, **rest)

    @staticmethod
    def list_sessions(store: Any, user_id: str | None = None) -> list[SessionInfo]:
        """Deprecated: `Sessions(store).list(user_id)`."""
        return _opener("list_sessions", {"store": store})[0].list(user_id)

    @staticmethod
    def stored(session_id: str, *, store: Any, user_id: str | None = None) -> SessionInfo:
        """Deprecated: `Sessions(store).info(session_id, user_id=…)`."""
        return _opener("stored", {"store": store})[0].info(session_id, user_id=user_id)

    @staticmethod
    def delete(session_id: str, *, store: Any, user_id: str | None = None, **memory: Any) -> None:
        """Deprecated: `Sessions(store, memory=…).delete(session_id, user_id=…)`."""
        _opener("delete", {"store": store, **memory})[0].delete(session_id, user_id=user_id)

    state: str = _moved("view", "state")
    completed: bool = _moved("view", "completed")
    variables: dict[str, Any] = _moved("view", "variables")
    audit: list[TransitionRecord] = _moved("log", "audit", call=True)
    last_decisions: list[Decision] = _moved("log", "decisions", call=True)

    @property
    def transcript(self) -> list[dict[str, str]]:
        """Deprecated: `view.transcript`."""
        _warn("transcript", "view.transcript")
        return list(self.view.transcript)

    current_state: Callable[[], AnyState | None] = _moved("view", "current_state", method=True)
    turns: Callable[[], list[Turn]] = _moved("log", "turns", call=True, method=True)
    events: Callable[..., list[Event]] = _moved("log", "events", call=True, method=True)


class Sessions:
    """The sessions of one store: started, resumed, listed, described and deleted, each
    opened with this memory store, model, tool runner and after-turn memory policy."""

    def __init__(
        self,
        store: Any = None,
        *,
        memory: MemoryStore | None = None,
        model: Model = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
        tools: ToolRunner | None = None,
        remember: Policy = "now",
        announce: Announcer | None = None,
    ) -> None:
        """`store` is a `SessionStore`, a folder (its `sessions.sqlite` is used), a
        `.sqlite` file, a `postgresql://` URL, or None (in memory).

        `model` is a `ChatModel`, an `ExitChooser` that reads messages itself, a model name
        (see `cgraph.wiring.models`), or None (the graph's `model.name`, else the offline
        mode; a resumed session the model it was started with). `memory` defaults to
        `NullMemory`. `tools` runs the tools (by default each session gets a new
        `ToolRunner`, its own worker); sessions may share one, and its workers.
        `remember` is the after-turn memory policy, `"now"` or `"background"`
        (`cgraph.runtime.turn.after`). `announce` makes what a session's start and each
        committed turn send out (a server's webhooks): the store writes it to its outbox
        in the same transaction.
        """
        self.store: SessionStore = open_store(store)
        self.memory = memory or NullMemory()
        self.model, self.api_base, self.tools, self.remember = model, api_base, tools, remember
        self.announce = announce
        self.clock = clock or time.time

    def start(
        self,
        graph: Graph | str | Path,
        *,
        model: Model = None,
        user_id: str = "local",
        session_id: str | None = None,
        state: str | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a new session of `graph` (a `Graph` or a path). `model` overrides the one
        these sessions run with. `state` starts the session in that root state, as if the
        conversation had already entered it (its `say:` is not repeated); `variables`
        override the graph's values."""
        session, speaks = self._created(graph, model, user_id, session_id, state, variables)
        if speaks:
            session.opening = session.speak_first()
        return session

    async def astart(
        self,
        graph: Graph | str | Path,
        *,
        pool: Executor | None = None,
        model: Model = None,
        user_id: str = "local",
        session_id: str | None = None,
        state: str | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> Session:
        """`start` on an event loop, as `Session.asend` runs `send`: the session written
        to the store in `pool`, the opening of a graph that speaks first awaited."""
        made = partial(self._created, graph, model, user_id, session_id, state, variables)
        session, speaks = await asyncio.get_running_loop().run_in_executor(pool, made)
        if speaks:
            opening = _speaking_first(session, session._engine)
            session.opening = await drive_async(opening, in_pool(pool))
        return session

    def _created(
        self,
        graph: Graph | str | Path,
        model: Model,
        user_id: str,
        session_id: str | None,
        state: str | None,
        variables: Mapping[str, Any] | None,
    ) -> tuple[Session, bool]:
        """The new session, written to the store, and whether it speaks first now."""
        spec = graph_of(graph)
        first_state = initial_state(spec, state, variables)
        deps = self._dependencies(
            spec, model or self.model, session_id or uuid.uuid4().hex[:12], user_id
        )
        info, first = create(deps, first_state)
        session = self._open(info, deps, first_state, [first], FIRST)
        return session, spec.speaks_first and state is None

    def resume(
        self,
        session_id: str,
        *,
        model: Model = None,
        graph: Graph | str | Path | None = None,
        finish: bool = True,
        user_id: str | None = None,
    ) -> Session:
        """Continue a stored session from its last committed step (the graph file is
        re-read from the path recorded at start unless `graph` is given).

        With `finish` (the default) a turn the previous process left unfinished is
        completed now — no committed step runs again — and returned as `recovered`; a
        finished turn whose memories were never extracted (the process died between the
        two) has them extracted now. A session belongs to its user: with `user_id`, another
        user's session is refused (`NotTheOwner`).
        """
        stored = self.store.load(session_id)
        info = _owned(stored.info, user_id)
        if graph is None and not info.graph:
            raise ConfigError(
                f"session `{session_id}` was started from a graph built in code; "
                "pass `graph=` to resume it"
            )
        spec = graph_of(graph if graph is not None else info.graph)
        state, position = read_snapshot(stored.snapshot, lambda: stored.events)
        problem = _not_resumable(spec, info, state)
        if problem:
            raise SessionError(f"session `{session_id}` {problem}")
        deps = self._dependencies(
            spec, model or self.model or info.model or None, info.id, info.user_id
        )
        session = self._open(info, deps, state, stored.events, position)
        if finish and state.pending is not None:
            session.recovered, session.dropped = _finish_or_drop(session)
        elif finish:
            session.extract_memories()
        return session

    def list(self, user_id: str | None = None) -> list[SessionInfo]:
        """The sessions in the store (a user's, with `user_id`), most recently updated first."""
        return self.store.sessions(user_id)

    def info(self, session_id: str, *, user_id: str | None = None) -> SessionInfo:
        """What the store knows of a session (graph, user, turn, state) without opening
        it; `SessionNotFound` if absent, `NotTheOwner` for another user's (with `user_id`)."""
        return _owned(self.store.load(session_id).info, user_id)

    def delete(self, session_id: str, *, user_id: str | None = None) -> None:
        """Forget a stored session: its events, checkpoints and snapshot (a user's right to
        be forgotten) and its task memories in the memory store, which no other session
        can recall; the user's personal and project memories stay (see
        `MemoryStore.delete`). With `user_id`, another user's session is refused
        (`NotTheOwner`); `SessionNotFound` if absent.

        The memories go first: a memory store that fails (`MemoryStoreError`) leaves the
        session whole, to be deleted again, where deleting the log first would leave task
        memories that nothing names any more."""
        info = self.info(session_id, user_id=user_id)
        own = self.memory.list(info.user_id, tiers=("task",), session_id=session_id)
        if own:
            self.memory.delete(info.user_id, [m.id for m in own])
        if not self.store.delete(session_id):
            raise SessionNotFound(f"no session `{session_id}`")

    def prepare(self, graph: Graph | str | Path, *, model: Model = None) -> None:
        """Load now what the first turn of a session of `graph` would load: its models (a
        name and key checked) and what they load ahead of a first call (litellm and its
        first call's modules, the offline chooser's embedding model). A server does it
        before it takes requests."""
        prepare(graph_of(graph), model or self.model, self.api_base)

    def close(self) -> None:
        """Close the store (it opens again when used)."""
        self.store.close()

    def _dependencies(
        self, spec: Graph, model: Model, session_id: str, user_id: str
    ) -> Dependencies:
        models = session_models(spec, model, self.api_base)
        return Dependencies(
            graph=spec,
            chooser=models.chooser,
            chat=models.chat,
            memory=self.memory,
            store=self.store,
            clock=self.clock,
            session_id=session_id,
            user_id=user_id,
            tools=self.tools or ToolRunner(),
            rememberer=models.rememberer,
            summariser=models.summariser,
            announce=self.announce,
        )

    def _open(
        self,
        info: SessionInfo,
        deps: Dependencies,
        state: SessionState,
        events: builtins.list[Event],
        position: LogPosition,
    ) -> Session:
        """The one way a session is opened, new or stored: from its record, its state and
        the events the engine keeps."""
        engine = Engine(deps, state, events, position)
        graphs = engine.graphs
        isolated = [
            (tool, graphs.folder_of(graph))
            for graph in graphs.reachable()
            for tool in graph.tools
            if tool.isolation == "process"
        ]
        if isolated:  # a tool worker boots, and imports them, while the conversation starts
            deps.tools.warm(isolated, graphs.root.trust)
        return Session(info, engine, Remembering(engine, self.remember))


_RENAMED = {"stored": "info", "list_sessions": "list"}
_OPENER = frozenset({"store", "memory", "api_base", "clock", "tools", "announce"})
"""What the deprecated `Session.start`/`Session.resume` took that `Sessions` now holds."""


def _opener(old: str, options: dict[str, Any]) -> tuple[Sessions, dict[str, Any]]:
    """The `Sessions` a deprecated `Session` call names, and the rest of its options
    (those of `Sessions.start`/`resume`)."""
    _warn(old, f"Sessions(store, …).{_RENAMED.get(old, old)}", depth=4)
    held = {k: v for k, v in options.items() if k in _OPENER}
    return Sessions(**held), {k: v for k, v in options.items() if k not in _OPENER}


def _speaking_first(session: Session, engine: Engine) -> Steps[Turn]:
    """`Session.speak_first` as steps, for either driver."""
    yield from engine.turn("", opening=True)
    return session.log.turn(engine.state.turn)


def _undoing(session: Session, engine: Engine) -> Steps[Turn | None]:
    """`Session.undo` as steps, for either driver."""
    number = engine.state.turn
    if engine.state.pending is not None:  # the turn in progress is dropped
        yield from engine.rewind(number, cancelled=True)
        return build_turn(session.id, number, [])
    if number == 0:
        return None
    taken = session.log.turn(number)
    yield from engine.rewind(number, cancelled=False)
    return taken


def _owned(info: SessionInfo, user_id: str | None) -> SessionInfo:
    if user_id is not None and user_id != info.user_id:
        raise NotTheOwner(f"session `{info.id}` belongs to another user than `{user_id}`")
    return info


def _finish_or_drop(session: Session) -> tuple[Turn | None, str | None]:
    """The interrupted turn finished, or cancelled with why: its message cannot be
    stored, or finishing it raised what no retry would change (not a model or store
    error, which a later resume may get past)."""
    problem = text_problem(session.view.interrupted or "")
    if problem is None:
        try:
            return session.finish_turn(), None
        except CgraphError:
            raise
        except Exception as err:  # cgraph's own failure: the same on every resume
            problem = f"could not be finished ({type(err).__name__}: {err})"
    session.cancel_turn()
    return None, f"turn {session.view.turn_number + 1} was cancelled: its message {problem}"


def _not_resumable(graph: Graph, info: SessionInfo, snapshot: SessionState) -> str | None:
    """Why `graph` cannot carry on the stored session, if it cannot: another graph, or an
    edit that removed a state the session stands in (its root frames)."""
    if info.graph_name and graph.name != info.graph_name:
        return f"runs graph `{info.graph_name}`, not `{graph.name}`; start a new session"
    for frame in snapshot.stack:
        if not frame.graph and frame.state not in (*graph.states, START, END):
            return f"is in state `{frame.state}`, which graph `{graph.name}` no longer has"
    return None
