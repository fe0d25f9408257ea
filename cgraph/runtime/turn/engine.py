"""The interpreter: one user turn, stepped state by state, committed step by step.

A turn commits the user's message, then loops: the history window is brought up to date
(`ask.history`), the current state's handler (`cgraph.runtime.handlers`) returns an
outcome, the `Applier` (`applying`) makes the session's next state from it, and the engine
emits the events the applier names and commits them with that state in one transaction.
The turn ends at a user-facing reply, a guard, a failure, or END. Memories are extracted
afterwards, once the reply is committed (`cgraph.runtime.memory.extraction`).

A step that only moves — it took the only way out or read a condition, tagged, set
variables, recalled — asked no model and did nothing outside: redone after a crash, it
comes out the same. Its commit is left to the next step's, which writes both in one
transaction (`replayable`); a tool's intent, written ahead, commits it first
(`EventLog.defer`). A turn of bench_serve's flow commits 4 times instead of 8, and the
session is still always exactly at a committed step.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from cgraph.errors import RenderError, ValueTooLarge
from cgraph.runtime.ask import history
from cgraph.runtime.ask.choosing import ModelChooser
from cgraph.runtime.ask.exchange import Asked
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.ask.streaming import Chunk, StreamingModel
from cgraph.runtime.handlers import HANDLERS
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.entering import choose_start
from cgraph.runtime.log import reading as log_view
from cgraph.runtime.log.events import EventLog
from cgraph.runtime.log.snapshots import read_snapshot
from cgraph.runtime.memory import extraction
from cgraph.runtime.memory.gateway import MemoryGateway
from cgraph.runtime.needs import Offload, Steps
from cgraph.runtime.ports import ChatModel, Delivery, ExitChooser, LLMRequest
from cgraph.runtime.routes.failures import StepRenderFailed, failed_step
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.outcomes import Effects, Emit, Outcome
from cgraph.runtime.state.records import Event
from cgraph.runtime.state.snapshot import LogPosition, SessionState
from cgraph.runtime.state.view import View, template_context, view_of
from cgraph.runtime.turn.applying import Applied, Applier
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.runtime.turn.moves import current
from cgraph.spec.model import AnyState, Graph

T = TypeVar("T")
Sink = Callable[[Chunk], None]
"""Where a turn's reply goes as the model writes it (`Session.stream`)."""
MOVES_ONLY = frozenset({"transition", "annotation", "variables", "recall"})
"""What a step that only moves emits (a recall reads memories, and may read them again)."""


def replayable(events: tuple[Emit, ...]) -> bool:
    """The step asked no model (its decisions asked nothing: `attempts` 0), called no tool,
    stored nothing and said nothing: redone, it comes out the same."""
    return all(
        e.kind in MOVES_ONLY or (e.kind == "decision" and not e.data.get("attempts", 1))
        for e in events
    )


class Engine:
    """Runs turns for one session, as steps (`cgraph.runtime.needs`): every model call,
    memory call, tool call and store write is yielded to a driver, the blocking one or the
    async one, never made here. `Session` owns it and holds the public API."""

    def __init__(
        self,
        deps: Dependencies,
        state: SessionState,
        events: list[Event],
        position: LogPosition,
    ) -> None:
        self.deps = deps
        self.graphs = Graphs(deps.graph)
        self.memory = MemoryGateway(
            deps.memory, deps.graph.memory, user_id=deps.user_id, session_id=deps.session_id
        )
        self.applier = Applier(self.graphs, self._templates)
        self._open(state, events, position)

    def _open(self, state: SessionState, events: list[Event], position: LogPosition) -> None:
        deps, self.state = self.deps, state
        self.log = EventLog(deps.store, deps.session_id, deps.clock, events, position, state)
        self.prompter = Prompter(deps.graph, self.log.transcript)

    @classmethod
    def load(cls, deps: Dependencies) -> Engine:
        """The engine at the session's last committed step."""
        stored = deps.store.load(deps.session_id)
        state, position = read_snapshot(stored.snapshot, lambda: stored.events)
        return cls(deps, state, stored.events, position)

    def qualified(self) -> str:
        return self.state.here

    def current_graph(self) -> Graph:
        return current(self.state, self.graphs)[0]

    def current_state(self) -> AnyState | None:
        return current(self.state, self.graphs)[1]

    # ----- the turn -----------------------------------------------------------------------

    def turn(
        self,
        message: str,
        key: str | None = None,
        *,
        opening: bool = False,
        sink: Sink | None = None,
    ) -> Steps[None]:
        """One user turn: the message committed, then every step until the turn ends;
        `opening` is the turn a `speaks_first` graph takes before the user has said
        anything (its empty message is not part of the transcript). With a `sink`, an
        action's reply goes there as the model writes it."""
        yield from self._recovering(self._turn(message, key, opening, sink))

    def finish(self) -> Steps[None]:
        """The interrupted turn completed from its last committed step."""
        yield from self._recovering(self.run())

    def _turn(self, message: str, key: str | None, opening: bool, sink: Sink | None) -> Steps[None]:
        yield from self.begin(message, key, opening=opening)
        yield from self.run(sink)

    def begin(self, message: str, key: str | None = None, *, opening: bool = False) -> Steps[None]:
        """The turn's message, committed (no step taken yet)."""
        said: dict[str, Any] = {"text": message, "state": self.state.here}
        if key is not None:
            said["key"] = key
        if opening:
            said["opening"] = True
        self._take(self.applier.begin(self.state, message, said))
        yield from self._commit()

    def _recovering(self, steps: Steps[T]) -> Steps[T]:
        """The engine's own recovery: on any escape the session is back at its last
        committed step, read from the store; an interrupt (Ctrl-C) also drops the turn.
        The model's deadline starts here and covers the turn's calls and retries."""
        if self.deps.chat is not None:
            self.deps.chat.begin_turn()
        try:
            return (yield from steps)
        except KeyboardInterrupt:
            yield from self._reload()
            if self.state.pending is not None:
                yield from self.rewind(self.state.turn, cancelled=True)
            raise
        except BaseException:
            yield from self._reload()
            raise

    def _reload(self) -> Steps[None]:
        deps = self.deps
        stored = yield Offload(partial(deps.store.load, deps.session_id), "store")
        state, position = read_snapshot(stored.snapshot, lambda: stored.events)
        self._open(state, stored.events, position)

    def run(self, sink: Sink | None = None) -> Steps[None]:
        """Step until the turn ends; every step is committed before the next begins."""
        chat, chooser = self.deps.chat, self.deps.chooser
        if sink is not None and chat is not None and chat.capabilities.streams:
            chat = StreamingModel(chat, sink)
            chooser = ModelChooser(chat)
        while True:
            try:
                yield from self._prepare(chat)
                outcome = yield from self._outcome(chooser, chat)
            except StepRenderFailed as failure:
                outcome = failed_step(failure)
            except (RenderError, ValueTooLarge) as err:  # a render outside the handlers' own
                outcome = failed_step(StepRenderFailed(self.qualified(), "prompt", err))
            applied = self.applier.apply(self.state, outcome)
            self._take(applied)
            if applied.done:
                turn = self.state.turn
                yield from self._commit(checkpoint=turn, deliveries=self._announced(turn))
                return
            if replayable(applied.events):
                self.log.defer(self.state)
            else:
                yield from self._commit()

    def _prepare(self, model: ChatModel | None) -> Steps[None]:
        """Before a step: the entered state's `context:`, the summary, the window's start
        (committed when they change, so a tool's intent written ahead follows them). The
        transcript grows only between turns, so the window moves only before a turn's first
        step; a state's `context:` applies before its own first step."""
        state, here = self.state, self.qualified()
        marks, context = state.marks, state.scratch.context
        if state.scratch.step and context is None:
            return
        summariser = self.deps.summariser
        spec = self.current_state() if context is not None else None
        keep = spec.summary_prompt if spec is not None else None
        effects = yield from history.before_step(
            self.prompter, marks, context, model, here, summariser, keep
        )
        if effects:
            self._take(self.applier.effects(state, effects))
            yield from self._commit()

    def _outcome(self, chooser: ExitChooser, chat: ChatModel | None) -> Steps[Outcome]:
        graph, spec = current(self.state, self.graphs)
        frame = StepContext(
            view=self._view(),
            graph=graph,
            spec=spec,
            graphs=self.graphs,
            requests=self.prompter,
            chooser=chooser,
            calls_tools=chat is not None and chat.capabilities.calls_tools,
            memory=self.memory,
            journal=self.log,
            tools=self.deps.tools,
        )
        if not self.state.started:
            return (yield from choose_start(frame, "", push=False))
        state = graph.states[self.state.frame.state]  # the frame's spec (a KeyError if none)
        return (yield from HANDLERS[state.type](frame, graph, state))

    def _take(self, applied: Applied) -> None:
        """The applier's next state, and its events emitted to the log."""
        self.state = applied.state
        for event in applied.events:
            self.log.emit(event.kind, self.state.turn, event.data)

    # ----- what a step sees ---------------------------------------------------------------

    def _view(self, state: SessionState | None = None) -> View:
        state = state or self.state
        so_far = self.log.turn_so_far(state.turn)
        sid, uid = self.deps.session_id, self.deps.user_id
        return view_of(state, self.log.transcript, so_far, sid, uid)

    def _templates(self, state: SessionState) -> dict[str, Any]:
        graph = current(state, self.graphs)[0]
        return template_context(self._view(state), graph, state.frame.state)

    # ----- after a turn, and taking turns back --------------------------------------------

    def extraction_pending(self) -> bool:
        """The latest turn finished and its memories, wanted, were not extracted yet."""
        events = partial(self.log.turn_events, self.state.turn)
        return extraction.pending(self.state, self.memory, events)

    def extract_memories(self, *, recovering: bool = False) -> Steps[None]:
        """One `extract` question over the turn (or the session), stored, then committed.
        `recovering` (a process resuming the session): what the store already took from
        the turn before a crash is logged instead, so it is never extracted twice."""
        if self.extraction_pending():
            yield from self._recovering(self._extract(recovering))

    def _extract(self, recovering: bool) -> Steps[None]:
        found: Effects | None = None
        if recovering:
            found = yield from self.memory.already_stored(self.state.turn)
        if found is None:
            deps, state, view = self.deps, self.current_state(), self._view()
            found = yield from extraction.extract(
                view, deps.graph, state, self.prompter, deps.chat, deps.rememberer, self.memory
            )
        self._take(self.applier.effects(self.state, found))
        yield from self._commit()

    def extraction_question(self) -> LLMRequest | None:
        """The latest turn's `extract` question when it is due and a language model answers
        it (None: nothing due, or no model: the rememberer answers at once)."""
        if self.deps.chat is None or not self.extraction_pending():
            return None
        return extraction.question(
            self._view(), self.deps.graph, self.current_state(), self.prompter
        )

    def take_extraction(self, asked: Asked, here: str, turn: int) -> Steps[None]:
        """Store and log the answer to turn `turn`'s `extract` question, then commit."""
        found = yield from extraction.stored(asked, self.memory, here, turn)
        self._take(self.applier.effects(self.state, found))
        yield from self._commit()

    def rewind(self, number: int, *, cancelled: bool) -> Steps[None]:
        """Take back turn `number` (the latest): back to the checkpoint before it, and
        (an undo, not a cancel) forget the memories it stored."""
        store, sid = self.deps.store, self.deps.session_id
        before = yield Offload(partial(self.log.checkpoint_before, number), "store")
        saved, position = read_snapshot(before, lambda: store.events(sid))
        if not cancelled:
            ids = [m["id"] for m in log_view.stored(self.log.turn_events(number))]
            forgotten = yield from self.memory.forget(ids)
            self._take(self.applier.effects(self.state, forgotten))
        self.state = saved
        yield Offload(partial(self.log.undo, number, saved, position, cancelled=cancelled), "store")
        self.prompter.restart(self.log.transcript)
        yield from self._commit(rewind_to=number - 1)

    def _announced(self, number: int) -> tuple[Delivery, ...]:
        """What turn `number`, ending, sends out (`Dependencies.announce`): committed with
        its last step, so it is sent exactly when the turn is kept."""
        announce = self.deps.announce
        if announce is None:
            return ()
        events = self.log.turn_events(number)
        turn = log_view.build_turn(self.deps.session_id, number, events)
        since = events[0].seq if events else self.log.turn_seq
        return tuple(announce.turned(self.deps.graph.name, self.deps.user_id, turn, since))

    def _commit(self, **where: Any) -> Steps[None]:
        log = self.log
        acall = partial(log.acommit, self.state, **where) if log.awaits else None
        yield Offload(partial(log.commit, self.state, **where), "store", acall)
