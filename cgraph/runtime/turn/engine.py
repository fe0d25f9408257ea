"""The interpreter: one user turn, stepped state by state, committed at every step.

A turn commits the user's message, then loops: the current state's handler
(`cgraph.runtime.handlers`) returns an outcome, an `Applier` (`cgraph.runtime.turn.applying`)
applies its effects, checks it against the graph and the loop guards and moves the
session, and the engine commits the step's events with the new snapshot in one
transaction. The turn ends at a user-facing reply, a guard, a failure, or END. Memories
are extracted afterwards, once the reply is committed (`cgraph.runtime.memory.extraction`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from cgraph.errors import RenderError, ValueTooLarge
from cgraph.runtime.ask.history import keep_summary
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.handlers import HANDLERS
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.entering import choose_start
from cgraph.runtime.log import reading as log_view
from cgraph.runtime.log.events import EventLog
from cgraph.runtime.log.snapshots import read_snapshot
from cgraph.runtime.memory import extraction
from cgraph.runtime.memory.gateway import MemoryGateway
from cgraph.runtime.routes.failures import StepRenderFailed, failed_step
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.outcomes import Effects, Emit, Outcome
from cgraph.runtime.state.records import Event
from cgraph.runtime.state.snapshot import Snapshot, here
from cgraph.runtime.state.view import View, template_context, view_of
from cgraph.runtime.turn.applying import Applier
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.runtime.turn.moves import current
from cgraph.spec.model import AnyState, Graph


class Engine:
    """Runs turns for one session; `Session` owns it and holds the public API."""

    def __init__(self, deps: Dependencies, snapshot: Snapshot, events: list[Event]) -> None:
        self.deps, self.snap = deps, snapshot
        self.graphs = Graphs(deps.graph)
        self.log = EventLog(deps.store, deps.session_id, deps.clock, events, snapshot)
        self.prompter = Prompter(deps.graph, self.log.transcript, snapshot.history_marks())
        self.memory = MemoryGateway(
            deps.memory, deps.graph.memory, user_id=deps.user_id, session_id=deps.session_id
        )

    @classmethod
    def load(cls, deps: Dependencies) -> Engine:
        """The engine at the session's last committed step."""
        stored = deps.store.load(deps.session_id)
        return cls(deps, read_snapshot(stored.snapshot, lambda: stored.events), stored.events)

    def qualified(self) -> str:
        return here(self.snap)

    def current_graph(self) -> Graph:
        return current(self.snap, self.graphs)[0]

    def current_state(self) -> AnyState | None:
        return current(self.snap, self.graphs)[1]

    # ----- the turn -----------------------------------------------------------------------

    def begin_turn(self, message: str, key: str | None = None, *, opening: bool = False) -> None:
        """Start a turn; `opening` is the turn a `speaks_first` graph takes before the user
        has said anything (its empty message is not part of the transcript)."""
        self.snap.begin_turn(message)
        said: dict[str, Any] = {"text": message, "state": here(self.snap)}
        if key is not None:
            said["key"] = key
        if opening:
            said["opening"] = True
        self.snap.turn_seq = self.log.emit("user_message", self.snap.turn, said).seq
        self._commit()

    def run(self) -> None:
        """Step until the turn ends; every step is committed before the next begins."""
        while True:
            try:
                outcome = self._outcome()
            except StepRenderFailed as failure:
                outcome = failed_step(failure)
            except (RenderError, ValueTooLarge) as err:  # a render outside the handlers' own
                outcome = failed_step(StepRenderFailed(self.qualified(), "prompt", err))
            done = self._apply(outcome)
            self.snap.step += 1
            if done:
                return
            self._commit()

    def _outcome(self) -> Outcome:
        self.log.record(self.snap, keep_summary(self.prompter, self.deps.model, self.qualified()))
        context = StepContext(
            view=self._view(),
            graphs=self.graphs,
            requests=self.prompter,
            model=self.deps.model,
            memory=self.memory,
            record_intent=self._intent,
            tools=self.deps.tools,
        )
        if not self.snap.started:
            return choose_start(context, "", push=False)
        graph = self.current_graph()
        state = graph.states[self.snap.frame.state]
        return HANDLERS[state.type](context, graph, state)

    def _apply(self, outcome: Outcome) -> bool:
        """Apply an outcome; True when the turn is over, its end committed as a checkpoint."""
        snap, model = self.snap, self.deps.model
        applier = Applier(snap, self.graphs, self.log, self.prompter, model, self._templates)
        if not applier.apply(outcome):
            return False
        self._commit(checkpoint=snap.turn)
        return True

    # ----- what a step sees ---------------------------------------------------------------

    def _view(self) -> View:
        log, snap = self.log, self.snap
        so_far = log.turn_so_far(snap.turn)
        return view_of(snap, log.transcript, so_far, self.deps.session_id, self.deps.user_id)

    def _templates(self) -> dict[str, Any]:
        return template_context(self._view(), self.current_graph(), self.snap.frame.state)

    def _intent(self, intent: Emit) -> None:
        self.log.emit(intent.kind, self.snap.turn, intent.data)
        self._commit()

    # ----- after a turn, and taking turns back --------------------------------------------

    def extraction_pending(self) -> bool:
        """The latest turn finished and its memories, wanted, were not extracted yet."""
        events = partial(self.log.turn_events, self.snap.turn)
        return extraction.pending(self.snap, self.memory, events)

    def extract_memories(self, *, recovering: bool = False) -> None:
        """One `extract` question over the turn (or the session), stored, then committed.
        `recovering` (a process resuming the session): what the store already took from
        the turn before a crash is logged instead, so it is never extracted twice."""
        if self.extraction_pending():
            found: Effects | None = None
            if recovering:
                found = self.memory.already_stored(self.snap.turn)
            if found is None:
                view, root, model = self._view(), self.deps.graph, self.deps.model
                state, transcript = self.current_state(), self.log.transcript
                found = extraction.extract(
                    view, root, state, self.prompter, model, self.memory, transcript
                )
            self.log.record(self.snap, found)
            self._commit()

    def rewind(self, number: int, *, cancelled: bool) -> None:
        """Take back turn `number` (the latest): back to the checkpoint before it, and
        (an undo, not a cancel) forget the memories it stored."""
        store, sid = self.deps.store, self.deps.session_id
        saved = read_snapshot(self.log.checkpoint_before(number), lambda: store.events(sid))
        if not cancelled:
            ids = [m["id"] for m in log_view.stored(self.log.turn_events(number))]
            self.log.record(self.snap, self.memory.forget(ids))
        self.snap = saved
        self.log.undo(number, saved, cancelled=cancelled)
        self.prompter.restart(self.snap.history_marks(), self.log.transcript)
        self._commit(rewind_to=number - 1)

    def _commit(self, **where: int) -> None:
        self.snap.keep_history_marks(self.prompter.marks)
        self.log.commit(self.snap, **where)
