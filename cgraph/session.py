"""The library API of a running conversation.

    graph = cgraph.load_graph("graphs/medical_checkin.yaml")
    session = Session.start(graph, model="semantic", user_id="ann", store=".cgraph")
    turn = session.send("Hi, I'm ready")
    turn.reply, turn.path, turn.transitions
    ...
    session = Session.resume(session.id, store=".cgraph", model="semantic")

Every step of a turn is committed to the store before the next one runs. If the process
dies mid-turn, `Session.resume` finishes the interrupted turn from its last committed step
(`session.recovered` is that turn); Ctrl-C during `send` cancels the turn instead, leaving
the session as it was before the message.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, replace
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
from cgraph.runtime.ask.streaming import (
    CallingTools,
    Chunk,
    Delta,
    Retracted,
    can_stream,
    run_streamed,
    streamed,
)
from cgraph.runtime.log import reading as log
from cgraph.runtime.log.snapshots import read_snapshot
from cgraph.runtime.memory.extraction import Background
from cgraph.runtime.needs import DRIVER, Offload, Steps, drive_async, in_pool
from cgraph.runtime.ports import (
    ChatModel,
    ExitChooser,
    Memory,
    MemoryStore,
    NullMemory,
    SessionInfo,
)
from cgraph.runtime.state.records import Decision, Event, TransitionRecord, Turn
from cgraph.runtime.state.snapshot import LogPosition, SessionState
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.runtime.turn.engine import Engine, Sink
from cgraph.spec.limits import check_message, text_problem
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import END, START, split
from cgraph.wiring.compose import FIRST, create, graph_of, initial_state, session_models
from cgraph.wiring.stores import open_store

T = TypeVar("T")
__all__ = [
    "CallingTools",
    "Chunk",
    "Delta",
    "Event",
    "Recheck",
    "Retracted",
    "Session",
    "SessionInfo",
    "ToolRunner",
    "Turn",
]
"""Besides `Session`, what its methods return and yield, for front ends to name."""


@dataclass(frozen=True, slots=True)
class Recheck:
    """What `Session.recheck` found: whether the session kept open is still the stored
    one, and the turn already made for the key asked about, if any."""

    current: bool
    keyed: Turn | None = None


class Session:
    """One conversation with a graph, checkpointed at every step."""

    id: str
    user_id: str
    graph: Graph

    def __init__(
        self,
        *,
        info: SessionInfo,
        deps: Dependencies,
        state: SessionState,
        events: list[Event],
        position: LogPosition,
    ) -> None:
        self.id, self.user_id, self.graph, self.info = info.id, info.user_id, deps.graph, info
        self.model, self.memory, self.store = deps.model, deps.memory, deps.store
        self.deps = deps
        self.recovered: Turn | None = None
        self.dropped: str | None = None
        """Why a turn the previous process left unfinished was cancelled on resume instead
        (its message cannot be stored, or finishing it failed in cgraph itself): a turn
        that can never be finished is dropped once, never retried on every resume."""
        """The turn an interrupted process left unfinished, completed by `resume`."""
        self.opening: Turn | None = None
        """The first turn of a graph that `speaks_first`, taken by `start` (user None)."""
        self._maybe_stored = False
        self._speaks_first = False
        self._background: list[Background] = []
        """The latest turn's memories are not logged, but the store may hold them: an
        earlier process finished the turn (and may have died storing them), or their
        extraction failed here after storing."""
        self._engine = Engine(deps, state, events, position)
        graphs = self._engine.graphs
        isolated = [
            (tool, graphs.folder_of(graph))
            for graph in graphs.reachable()
            for tool in graph.tools
            if tool.isolation == "process"
        ]
        if isolated:  # a tool worker boots, and imports them, while the conversation starts
            deps.tools.warm(isolated)

    @classmethod
    def start(
        cls,
        graph: Graph | str | Path,
        *,
        model: ChatModel | ExitChooser | str | None = None,
        user_id: str = "local",
        session_id: str | None = None,
        store: Any = None,
        memory: MemoryStore | None = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
        state: str | None = None,
        variables: Mapping[str, Any] | None = None,
        tools: ToolRunner | None = None,
    ) -> Session:
        """Start a new session. `store` is a `SessionStore`, a folder (its `sessions.sqlite`
        is used), a `.sqlite` file, or None (in memory).

        `model` is a `ChatModel`, an `ExitChooser` that reads messages itself, a model name
        (see `cgraph.wiring.models`), or None (the graph's `model.name`, else the offline mode).
        `memory` defaults to `NullMemory`.
        `state` starts the session in that root state, as if the conversation had already
        entered it (its `say:` is not repeated); `variables` override the graph's values.
        `tools` runs the tools (a new `ToolRunner`, its own worker, by default); sessions
        run one after another may share one, and its workers.
        """
        session = cls._created(
            graph,
            model=model,
            user_id=user_id,
            session_id=session_id,
            store=store,
            memory=memory,
            api_base=api_base,
            clock=clock,
            state=state,
            variables=variables,
            tools=tools,
        )
        if session._speaks_first:
            session.opening = session._drive(session._speaking_first())
        return session

    @classmethod
    async def astart(
        cls, graph: Graph | str | Path, *, pool: Executor | None = None, **options: Any
    ) -> Session:
        """`start` on an event loop, as `asend` runs `send`: the session created in `pool`,
        and the first turn of a graph that speaks first run with the async driver."""
        made = partial(cls._created, graph, **options)
        session = await asyncio.get_running_loop().run_in_executor(pool, made)
        if session._speaks_first:
            session.opening = await drive_async(session._speaking_first(), in_pool(pool))
        return session

    @classmethod
    def _created(
        cls,
        graph: Graph | str | Path,
        *,
        model: ChatModel | ExitChooser | str | None = None,
        user_id: str = "local",
        session_id: str | None = None,
        store: Any = None,
        memory: MemoryStore | None = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
        state: str | None = None,
        variables: Mapping[str, Any] | None = None,
        tools: ToolRunner | None = None,
    ) -> Session:
        """The new session written to its store, before a graph that speaks first speaks."""
        spec = graph_of(graph)
        models = session_models(spec, model, api_base)
        first_state = initial_state(spec, state, variables)
        sid = session_id or uuid.uuid4().hex[:12]
        deps = Dependencies(
            graph=spec,
            chooser=models.chooser,
            chat=models.chat,
            memory=memory or NullMemory(),
            store=open_store(store),
            clock=clock or time.time,
            session_id=sid,
            user_id=user_id,
            tools=tools or ToolRunner(),
            rememberer=models.rememberer,
            summariser=models.summariser,
        )
        info, first = create(deps, first_state)
        session = cls(info=info, deps=deps, state=first_state, events=[first], position=FIRST)
        session._speaks_first = spec.speaks_first and state is None
        return session

    def _speaking_first(self) -> Steps[Turn]:
        """The start state's words before the user types (`speaks_first: true`)."""
        yield from self._engine.turn("", opening=True)
        return self._built_turn(self.turn_number)

    @classmethod
    def resume(
        cls,
        session_id: str,
        *,
        store: Any,
        model: ChatModel | ExitChooser | str | None = None,
        memory: MemoryStore | None = None,
        graph: Graph | str | Path | None = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
        finish: bool = True,
        user_id: str | None = None,
        tools: ToolRunner | None = None,
    ) -> Session:
        """Continue a stored session from its last committed step (the graph file is
        re-read from the path recorded at start unless `graph` is given).

        With `finish` (the default) a turn the previous process left unfinished is
        completed now — no committed step runs again — and returned as `recovered`; a
        finished turn whose memories were never extracted (the process died between the
        two) has them extracted now. A session belongs to its user: with `user_id`, another
        user's session is refused (`NotTheOwner`). `tools` as for `start`.
        """
        backend = open_store(store)
        stored = backend.load(session_id)
        _check_owner(stored.info, user_id)
        info = stored.info
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
        models = session_models(spec, model or info.model or None, api_base)
        deps = Dependencies(
            graph=spec,
            chooser=models.chooser,
            chat=models.chat,
            memory=memory or NullMemory(),
            store=backend,
            clock=clock or time.time,
            session_id=info.id,
            user_id=info.user_id,
            rememberer=models.rememberer,
            summariser=models.summariser,
            tools=tools or ToolRunner(),
        )
        session = cls(info=info, deps=deps, state=state, events=stored.events, position=position)
        session._maybe_stored = session._engine.extraction_pending()
        if finish and session.interrupted is not None:
            session.recovered, session.dropped = session._finish_or_drop()
        elif finish:
            session.extract_memories()
        return session

    @staticmethod
    def list_sessions(store: Any, user_id: str | None = None) -> list[SessionInfo]:
        """The sessions in a store, most recently updated first."""
        return open_store(store).sessions(user_id)

    @staticmethod
    def stored(session_id: str, *, store: Any, user_id: str | None = None) -> SessionInfo:
        """What the store knows of a session (graph, user, turn, state) without opening
        it; `SessionNotFound` if absent, `NotTheOwner` for another user's (with `user_id`)."""
        info = open_store(store).load(session_id).info
        _check_owner(info, user_id)
        return info

    @staticmethod
    def delete(
        session_id: str,
        *,
        store: Any,
        user_id: str | None = None,
        memory: MemoryStore | None = None,
    ) -> None:
        """Forget a stored session: its events, checkpoints and snapshot (a user's right to
        be forgotten) and, given its `memory` store, its task memories, which no other
        session can recall; the user's personal and project memories stay (see
        `MemoryStore.delete`). With `user_id`, another user's session is refused
        (`NotTheOwner`); `SessionNotFound` if absent."""
        backend = open_store(store)
        info = backend.load(session_id).info
        _check_owner(info, user_id)
        if not backend.delete(session_id):
            raise SessionNotFound(f"no session `{session_id}`")
        if memory is not None:
            owner = user_id or info.user_id
            own = memory.list(owner, tiers=("task",), session_id=session_id)
            if own:
                memory.delete(owner, [m.id for m in own])

    # ----- turns --------------------------------------------------------------------------

    def send(self, message: str, *, key: str | None = None, remember: bool = True) -> Turn:
        """Run one user turn; raises `SessionCompleted` after END.

        `key` is stored with the message so that a client re-sending it after a crash can
        find the turn it already made (`turn_with_key`) instead of making a second one.

        With `remember=False` the turn is returned as soon as its reply is committed, and
        its memories (per the graph's `memory.store`) are extracted later: by
        `extract_memories()`, else before the next turn, at `close()` or on resume. A
        front end shows the reply first that way. A message that cannot be stored (see
        `cgraph.spec.limits.check_message`) raises `InputError` before anything runs.
        """
        return self._drive(self._sending(message, key, remember, None))

    def _sending(
        self, message: str, key: str | None, remember: bool, sink: Sink | None
    ) -> Steps[Turn]:
        """`send` as steps (`cgraph.runtime.needs`), for either driver."""
        check_message(message, key)
        yield from self._take_background(wait=False)  # the reply never waits for the rest
        if self._background:
            yield from self._remembering_later()
        else:
            yield from self._extracting()
        if self.completed:
            raise SessionCompleted(
                f"session `{self.id}` reached END at turn {self.turn_number}; "
                "start a new session to talk again"
            )
        if self.interrupted is not None:
            raise SessionError(
                f"turn {self.turn_number} of session `{self.id}` was interrupted; "
                "call finish_turn() to complete it or cancel_turn() to drop it"
            )
        yield from self._engine.turn(message, key=key, sink=sink)
        extracted = (yield from self._extracting()) if remember else None
        return extracted or self._built_turn(self.turn_number)

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
        steps = self._sending(message, key, remember, None)
        return await drive_async(steps, in_pool(pool))

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

    def finish_turn(self) -> Turn:
        """Complete an interrupted turn from its last committed step (and extract its
        memories: a recovered turn's reply was never shown, so nothing waits for it)."""
        return self._drive(self._finishing())

    def _finishing(self) -> Steps[Turn]:
        if self.interrupted is None:
            raise SessionError(f"session `{self.id}` has no interrupted turn")
        yield from self._engine.finish()
        return (yield from self._extracting()) or self._built_turn(self.turn_number)

    def remember_later(self) -> None:
        """Start extracting the latest turn's memories without waiting: a language model is
        asked in a thread, and its answer is taken in (stored, and logged for its turn)
        whenever the session next acts after it has come; the next reply never waits for
        it. `extract_memories()` and `close()` wait for what is still being asked."""
        self._drive(self._remembering_later())

    def _remembering_later(self) -> Steps[None]:
        yield from self._take_background(wait=False)
        request = self._engine.extraction_question()
        if request is None or self.deps.chat is None:
            yield from self._extracting()  # nothing due, or the rememberer: at once
            return
        if any(b.turn == self.turn_number for b in self._background):
            return
        here = self.state
        self._background.append(Background(self.turn_number, here, self.deps.chat, request))

    def _take_background(self, wait: bool) -> Steps[None]:
        """Take in the answers `remember_later` asked for, in order (waiting with `wait`)."""
        while self._background:
            first = self._background[0]
            asked = (yield Offload(partial(first.answer, True), "model")) if wait else None
            asked = asked or first.answer(False)
            if asked is None:
                return
            done = self._background.pop(0)
            yield from self._engine.take_extraction(asked, done.here, done.turn)

    def _finish_or_drop(self) -> tuple[Turn | None, str | None]:
        """The interrupted turn finished, or cancelled with why: its message cannot be
        stored, or finishing it raised what no retry would change (not a model or store
        error, which a later resume may get past)."""
        message = self.interrupted or ""
        problem = text_problem(message)
        if problem is None:
            try:
                return self.finish_turn(), None
            except CgraphError:
                raise
            except Exception as err:  # cgraph's own failure: the same on every resume
                problem = f"could not be finished ({type(err).__name__}: {err})"
        self.cancel_turn()
        return None, f"turn {self.turn_number + 1} was cancelled: its message {problem}"

    def extract_memories(self) -> Turn | None:
        """Extract the latest turn's memories if they are due and not extracted yet (see
        the graph's `memory.store`); returns that turn, now with its `memory_calls`."""
        return self._drive(self._extracting())

    def _extracting(self) -> Steps[Turn | None]:
        yield from self._take_background(wait=True)
        if not self._engine.extraction_pending():
            return None
        try:
            yield from self._engine.extract_memories(recovering=self._maybe_stored)
        except BaseException:
            self._maybe_stored = True
            raise
        self._maybe_stored = False
        return self._built_turn(self.turn_number)

    def cancel_turn(self) -> None:
        """Drop a turn in progress: the session is as it was before its message."""
        if self.interrupted is not None:
            self._drive(self._engine.rewind(self.turn_number, cancelled=True))

    def undo(self) -> Turn | None:
        """Take back the last turn (state, variables, notes, transcript); returns it."""
        return self._drive(self._undoing())

    async def aundo(self, *, pool: Executor | None = None) -> Turn | None:
        """`undo` on an event loop, as `asend` runs `send`."""
        return await drive_async(self._undoing(), in_pool(pool))

    def _undoing(self) -> Steps[Turn | None]:
        number = self.turn_number
        if self.interrupted is not None:  # the turn in progress is dropped
            yield from self._engine.rewind(number, cancelled=True)
            return log.build_turn(self.id, number, [])
        if number == 0:
            return None
        taken = self._built_turn(number)
        yield from self._engine.rewind(number, cancelled=False)
        return taken

    def _drive(self, steps: Steps[T]) -> T:
        """The library's blocking calls run their steps with the blocking driver (a test
        runs them again with the async one: `cgraph.runtime.needs.DRIVER`)."""
        return DRIVER.get()(steps)  # type: ignore[no-any-return]

    def _built_turn(self, number: int) -> Turn:
        return log.build_turn(self.id, number, self._engine.log.turn_events(number))

    # ----- what the session shows ---------------------------------------------------------

    @property
    def state(self) -> str:
        """The current state's qualified id (`START` before a conditional start is chosen)."""
        return self._engine.qualified()

    @property
    def current_graph(self) -> Graph:
        """The graph the current state belongs to (a sub-graph while inside one)."""
        return self._engine.current_graph()

    def current_state(self) -> AnyState | None:
        """The current state's spec (None before a conditional start is chosen)."""
        return self._engine.current_state()

    def state_spec(self, name: str) -> AnyState | None:
        """The spec of a state this session has been in, by its qualified id (a decision's
        `state`); None for `START`, `END` or a graph it never entered."""
        graph_key, state_id = split(name)
        try:
            graph = self._engine.graphs.get(graph_key)
        except CgraphError:
            return None
        return graph.states.get(state_id)

    @property
    def streams(self) -> bool:
        """The reply can be shown as the model writes it (`stream`, `send_streaming`)."""
        return can_stream(self.deps.chat)

    @property
    def completed(self) -> bool:
        """True once the conversation reached `END`; `send` then raises `SessionCompleted`."""
        return self._engine.state.completed

    @property
    def interrupted(self) -> str | None:
        """The user message of a turn that started but did not finish, if any."""
        return self._engine.state.pending

    @property
    def turn_number(self) -> int:
        """The number of the latest turn still in effect (0 before the first message)."""
        return self._engine.state.turn

    @property
    def variables(self) -> dict[str, Any]:
        """A copy of the session's variables (the graph's, as set by states and tools), with
        the slots of the sub-graphs running now."""
        return dict(self._engine.state.readable)

    @property
    def notes(self) -> list[str]:
        """Reflection notes (internal; never shown to the user as replies)."""
        return list(self._engine.state.notes)

    @property
    def annotations(self) -> list[str]:
        """Tags written by annotation states so far, oldest first."""
        return list(self._engine.state.annotations)

    @property
    def transcript(self) -> list[dict[str, str]]:
        """`{"role": "user"|"assistant", "content": ...}` messages."""
        return [dict(m) for m in self._engine.log.transcript]

    @property
    def summary(self) -> str:
        """The running summary of the messages that left the prompt's window ("" if none)."""
        return self._engine.state.marks.summary

    @property
    def audit(self) -> list[TransitionRecord]:
        """Every transition still in effect, oldest first (undone turns left out; read from
        the store)."""
        return log.audit(log.effective(self.events()))

    @property
    def last_decisions(self) -> list[Decision]:
        """The choices made during the latest turn, by the model or the engine."""
        return log.decisions(self.turn_events())

    def turn_events(self, number: int | None = None) -> list[Event]:
        """The events of a turn still in effect (the latest by default)."""
        return self._engine.log.turn_events(self.turn_number if number is None else number)

    @property
    def last_turn(self) -> Turn | None:
        """The latest turn still in effect, or None before the first message."""
        number = self.turn_number
        if number == 0:
            return None
        return self._built_turn(number)

    def is_current(self) -> bool:
        """Whether the store still holds the step this session last committed (or read):
        False once another process wrote to it since. A front end that keeps sessions open
        between requests checks it, under the session's lock (`SessionStore.hold`), before
        using one again; a stale one is opened anew with `resume`."""
        return self.recheck().current

    def recheck(self, key: str | None = None) -> Recheck:
        """`is_current`, and when it is and `key` is given, `turn_with_key(key)`, from one
        read of the store that decodes neither the log nor the last turn
        (`SessionStore.standing`): what a front end asks at every request to a session
        it kept open."""
        stood = self.store.standing(self.id, None if key is None else str(key))
        same = stood.created_at == self.info.created_at  # not a new one of that id
        if not (same and stood.seq == self._engine.log.position().seq):
            return Recheck(current=False)
        if stood.keyed is None:
            return Recheck(current=True)
        turn, seq = stood.keyed
        events = self._engine.log.turn_events(turn, since=seq)
        return Recheck(current=True, keyed=log.build_turn(self.id, turn, events))

    def turn_with_key(self, key: str) -> Turn | None:
        """The turn still in effect whose message was sent with this `key`, if any (the
        store indexes keys: a lookup does not read the log)."""
        found = self.store.turn_of_key(self.id, str(key))
        if found is None:
            return None
        turn, seq = found
        return log.build_turn(self.id, turn, self._engine.log.turn_events(turn, since=seq))

    def turns(self) -> list[Turn]:
        """Every turn still in effect (undone turns left out), oldest first."""
        events = log.effective(self.events())
        numbers = range(1, self.turn_number + 1)
        return [log.build_turn(self.id, n, log.turn_events(events, n)) for n in numbers]

    def events(self, *, after: int = -1, limit: int | None = None) -> list[Event]:
        """The append-only event log, undone turns included (each undo is an event too):
        the events whose `seq` is above `after`, at most `limit` of them."""
        return self.store.events(self.id, after=after, limit=limit)

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

    def __repr__(self) -> str:
        info = replace(self.info, turn=self.turn_number, state=self.state)
        return f"Session(id={info.id!r}, user={info.user_id!r}, state={info.state!r})"


def _check_owner(info: SessionInfo, user_id: str | None) -> None:
    if user_id is not None and user_id != info.user_id:
        raise NotTheOwner(f"session `{info.id}` belongs to another user than `{user_id}`")


def _not_resumable(graph: Graph, info: SessionInfo, snapshot: SessionState) -> str | None:
    """Why `graph` cannot carry on the stored session, if it cannot: another graph, or an
    edit that removed a state the session stands in (its root frames)."""
    if info.graph_name and graph.name != info.graph_name:
        return f"runs graph `{info.graph_name}`, not `{graph.name}`; start a new session"
    for frame in snapshot.stack:
        if not frame.graph and frame.state not in (*graph.states, START, END):
            return f"is in state `{frame.state}`, which graph `{graph.name}` no longer has"
    return None
