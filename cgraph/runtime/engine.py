"""The interpreter: one user turn, stepped state by state, committed at every step.

A turn commits the user's message, then loops: the current state's handler
(`cgraph.runtime.handlers`) returns an outcome, the engine applies its effects, checks it
against the graph and the loop guards (`cgraph.runtime.guards`), applies it (the stack
rules are `cgraph.runtime.moves`), and commits the step's events with the new snapshot in
one transaction. The turn ends at a user-facing reply, a guard, a failure, or END.
Memories are extracted afterwards, once the reply is committed (`cgraph.runtime.extraction`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from cgraph.errors import RenderError, SessionError, ValueTooLarge
from cgraph.runtime import extraction, replies
from cgraph.runtime.context import StepContext, View, template_context, view_of
from cgraph.runtime.dependencies import Dependencies
from cgraph.runtime.events import EventLog
from cgraph.runtime.graphs import Graphs
from cgraph.runtime.guards import guard, limit_route
from cgraph.runtime.handlers import HANDLERS
from cgraph.runtime.handlers.entering import choose_start
from cgraph.runtime.history import apply_context, keep_summary
from cgraph.runtime.memory import MemoryGateway
from cgraph.runtime.moves import Arrival, enter, here, move
from cgraph.runtime.outcomes import Effects, Emit, Enter, Move, Outcome, Reply, Stop, apply_effects
from cgraph.runtime.prompting import Prompter
from cgraph.runtime.records import Event, EventKind
from cgraph.runtime.render_failures import StepRenderFailed, failed_step, fallback
from cgraph.runtime.snapshot import Snapshot
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import END


class Engine:
    """Runs turns for one session; `Session` owns it and holds the public API."""

    def __init__(self, deps: Dependencies, snapshot: Snapshot, events: list[Event]) -> None:
        self.deps, self.snap = deps, snapshot
        self.graphs = Graphs(deps.graph)
        self.log = EventLog(deps.store, deps.session_id, deps.clock, events, snapshot.seq)
        self.prompter = Prompter(deps.graph, self.log.transcript, snapshot.history_marks())
        self.memory = MemoryGateway(
            deps.memory, deps.graph.memory, user_id=deps.user_id, session_id=deps.session_id
        )

    @classmethod
    def load(cls, deps: Dependencies) -> Engine:
        """The engine at the session's last committed step."""
        stored = deps.store.load(deps.session_id)
        return cls(deps, Snapshot.from_dict(stored.snapshot), stored.events)

    def qualified(self) -> str:
        return here(self.snap)

    def current_graph(self) -> Graph:
        return self.graphs.get(self.snap.frame.graph)

    def current_state(self) -> AnyState | None:
        return self.current_graph().states.get(self.snap.frame.state)

    # ----- the turn -----------------------------------------------------------------------

    def begin_turn(self, message: str, key: str | None = None, *, opening: bool = False) -> None:
        """Start a turn; `opening` is the turn a `speaks_first` graph takes before the user
        has said anything (its empty message is not part of the transcript)."""
        self.snap.begin_turn(message)
        keyed: dict[str, Any] = {"key": key} if key is not None else {}
        if opening:
            keyed["opening"] = True
        self._emit("user_message", text=message, state=self.qualified(), **keyed)
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
        self._effects(keep_summary(self.prompter, self.deps.model, self.qualified()))
        context = StepContext(
            self._view(), self.graphs, self.prompter, self.deps.model, self.memory, self._intent
        )
        if not self.snap.started:
            return choose_start(context, "", push=False)
        graph = self.current_graph()
        state = graph.states[self.snap.frame.state]
        return HANDLERS[state.type](context, graph, state)

    def _apply(self, outcome: Outcome) -> bool:
        """Apply an outcome and its effects; True when the turn is over."""
        self._effects(outcome.effects)
        if isinstance(outcome, Reply):
            return self._end(outcome.text, self.qualified(), outcome.fallback)
        if isinstance(outcome, Stop):
            return self._stop(outcome)
        stop = guard(outcome, self.graphs, self.snap)
        if stop is not None:
            return self._stop(stop)
        return self._go(outcome)

    def _go(self, outcome: Move | Enter) -> bool:
        if isinstance(outcome, Enter):
            return self._arrive(enter(self.snap, self.graphs, outcome), outcome)
        arrival = move(self.snap, self.graphs, outcome)
        if arrival.target != END:
            return self._arrive(arrival, outcome)
        closing, failed = outcome.reply, Effects()
        if not closing:  # the ending state's words, read before the session leaves it
            graph, state, at = self.current_graph(), self.current_state(), self.qualified()
            closing, failed = replies.closing(graph, state, self.snap.entered, at, self._templates)
        self._effects(failed)
        self._arrive(arrival, outcome)
        self.snap.completed = True
        return self._end(closing, END, False)

    def _arrive(self, arrival: Arrival, outcome: Move | Enter) -> bool:
        self.snap.transitions += 1
        moved = {"from": arrival.source, "to": arrival.target, "exit": outcome.exit_id}
        self._emit("transition", **moved, description=outcome.description, reason=outcome.reason)
        if arrival.entered:
            strategy = getattr(self.current_state(), "context", "keep")
            self._effects(apply_context(strategy, self.prompter, self.deps.model, arrival.target))
        return False

    def _stop(self, stop: Stop) -> bool:
        """End the turn in the last user-facing state, with its fallback-or-authored text;
        or, when the graph says where a guard leads (`on_limit`), go there."""
        at = self.qualified()
        routed = limit_route(stop, self.graphs, self.snap)
        if routed is not None:
            owner, target = routed
            self.snap.limited = True
            self._emit("guard", guard=stop.guard, detail=stop.detail, at=at, routed_to=target)
            reason = f"{stop.guard}: {stop.detail}"
            limited = Move("on_limit", target, f"on limit {stop.guard}", reason, owner=owner)
            return self._go(limited)
        self.snap.back_to_user_facing()
        graph, state, there = self.current_graph(), self.current_state(), self.qualified()
        authored = ""
        if stop.guard is not None:
            words, failed = replies.said(state, there, self._templates)
            self._effects(failed)
            authored = words or ""
            self._emit("guard", guard=stop.guard, detail=stop.detail, at=at, stopped_in=there)
        text, failed = fallback(graph, state, there, self._templates(), authored)
        self._effects(failed)
        return self._end(text, there, stop.fallback, guard=stop.guard)

    def _end(self, text: str, state: str, fallback: bool, guard: str | None = None) -> bool:
        snap = self.snap
        text = " ".join(t for t in (*snap.said, text) if t)
        tags = list(getattr(self.current_state(), "message_metadata", ()))
        self._emit("reply", text=text, state=state, fallback=fallback, metadata=tags)
        ended = {"completed": snap.completed, "guard": guard, "transitions": snap.transitions}
        self._emit("turn_completed", state=self.qualified(), **ended)
        snap.pending = None
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
        self._emit(intent.kind, **intent.data)
        self._commit()

    # ----- after a turn, and taking turns back --------------------------------------------

    def extraction_pending(self) -> bool:
        """The latest turn finished and its memories, wanted, were not extracted yet."""
        events = partial(self.log.turn_events, self.snap.turn)
        return extraction.pending(self.snap, self.memory, events)

    def extract_memories(self) -> None:
        """One `extract` question over the turn (or the session), stored, then committed."""
        if self.extraction_pending():
            view, root, model = self._view(), self.deps.graph, self.deps.model
            state, transcript = self.current_state(), self.log.transcript
            found = extraction.extract(
                view, root, state, self.prompter, model, self.memory, transcript
            )
            self._effects(found)
            self._commit()

    def rewind(self, number: int, *, cancelled: bool) -> None:
        """Take back turn `number` (the latest): back to the checkpoint before it."""
        saved = self.deps.store.checkpoint(self.deps.session_id, number - 1)
        if saved is None:
            session = self.deps.session_id
            raise SessionError(f"no checkpoint before turn {number} of session `{session}`")
        if not cancelled:
            stored = [e for e in self.log.turn_events(number) if e.kind == "memory_stored"]
            self._effects(
                self.memory.forget([m["id"] for e in stored for m in e.data.get("memories", [])])
            )
        self.snap = Snapshot.from_dict(saved)
        self.log.undo(number, cancelled=cancelled)
        self.prompter.restart(self.snap.history_marks())
        self._commit(drop_checkpoints_after=number - 1)

    def _effects(self, effects: Effects) -> None:
        if not effects:  # most calls: no summary, no context strategy
            return
        for event in apply_effects(self.snap, effects, self.qualified()):
            self._emit(event.kind, **event.data)

    def _emit(self, kind: EventKind, /, **data: Any) -> None:
        self.log.emit(kind, self.snap.turn, data)

    def _commit(self, **where: int) -> None:
        self.snap.keep_history_marks(self.prompter.marks)
        self.log.commit(self.snap, **where)
