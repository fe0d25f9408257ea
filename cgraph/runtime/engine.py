"""The interpreter: one user turn, stepped state by state, committed at every step.

A turn commits the user's message, then loops: the current state's handler
(`cgraph.runtime.handlers`) returns an outcome, the engine applies its effects, checks it
against the graph and the loop guards (`cgraph.runtime.guards`), applies it, and commits
the step's events with the new snapshot in one transaction. The turn ends at a
user-facing reply, a guard, a failure, or END. Memories are extracted afterwards, once the
reply is committed (`extract_memories`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cgraph.backends.llm.types import ChatModel
from cgraph.backends.memory.policy import MemoryStore
from cgraph.errors import RenderError, SessionError, ValueTooLarge
from cgraph.runtime import log_view
from cgraph.runtime.asking import ask, fallback_reply
from cgraph.runtime.context import StepContext, View, template_context, view_of
from cgraph.runtime.events import EventLog
from cgraph.runtime.flows import slot_defaults
from cgraph.runtime.graphs import Graphs
from cgraph.runtime.guards import guard
from cgraph.runtime.handlers import HANDLERS, choose_start
from cgraph.runtime.history import apply_context, keep_summary
from cgraph.runtime.memory import MemoryGateway, this_turn
from cgraph.runtime.outcomes import Effects, Emit, Enter, Move, Outcome, Reply, Stop, apply_effects
from cgraph.runtime.prompting import Prompter, authored_reply
from cgraph.runtime.records import Event, EventKind
from cgraph.runtime.render_failures import StepRenderFailed, failed_step, fallback, rendered
from cgraph.runtime.snapshot import Frame, Snapshot
from cgraph.runtime.store import SessionStore
from cgraph.spec.model import CROSS, AnyState, Graph, is_cross
from cgraph.spec.names import END, START, qualify


@dataclass(frozen=True, slots=True)
class Dependencies:
    """What a running session is made of besides its state (`Session` and `Engine`)."""

    graph: Graph
    model: ChatModel
    memory: MemoryStore
    store: SessionStore
    clock: Callable[[], float]
    session_id: str
    user_id: str


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
        return qualify(self.snap.frame.graph, self.snap.frame.state)

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
        context = self._context()
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
        if isinstance(outcome, Enter):
            return self._enter(outcome)
        return self._move(outcome)

    def _enter(self, outcome: Enter) -> bool:
        source = self.qualified() if self.snap.started else START
        frame = Frame(outcome.graph, outcome.target)
        self.snap.stack = [*self.snap.stack, frame] if outcome.push else [frame]
        self.snap.started = True
        self._arrive(source, outcome)
        if outcome.push:
            self.snap.adopt_variables(self._initial(self.graphs.get(outcome.graph)))
        return False

    def _move(self, outcome: Move) -> bool:
        snap, source = self.snap, self.qualified()
        if outcome.owner is not None:  # a global exit or `on_limit` leaves inner graphs
            while len(snap.stack) > 1 and snap.frame.graph != outcome.owner:
                snap.stack.pop()
        if is_cross(outcome.target):
            return self._cross(source, outcome)
        if outcome.target != END:
            snap.frame.state, snap.frame.returned = outcome.target, False
            self._arrive(source, outcome)
            return False
        if len(snap.stack) > 1:  # a sub-graph ended: back to the parent's `graph` state
            snap.stack.pop()
            snap.frame.returned = True
            self._arrive(source, outcome, visit=False)
            return False
        closing = outcome.reply or self._closing()
        self._transition(source, END, outcome)
        snap.completed = True
        return self._end(closing, END, False)

    def _cross(self, source: str, outcome: Move) -> bool:
        """`file.yaml#state`: the other graph takes this graph's place in the stack, so
        when it ends, the conversation goes on where this graph would have."""
        file, _, state = outcome.target.partition(CROSS)
        key = self.graphs.child_key(self.snap.frame.graph, file)
        self.snap.stack[-1] = Frame(key, state)
        self.snap.adopt_variables(self._initial(self.graphs.get(key)))
        self._arrive(source, outcome)
        return False

    def _initial(self, graph: Graph) -> dict[str, Any]:
        return {**slot_defaults(graph), **graph.variables}

    def _closing(self) -> str:
        """With no parting words from the model: the ending action state's `say:` when this
        turn entered it (the user has not read it yet); else nothing, as it was said on
        entry (a silent state's `say:` is already in the turn's lines)."""
        state = self.current_state()
        say = getattr(state, "say", None)
        if not say or not self.snap.entered or getattr(state, "type", "") != "action":
            return ""
        said = self._said(lambda: authored_reply(state, self._templates(), self.qualified()))
        return fallback_reply(self.current_graph(), state) if said is None else said

    def _said(self, render: Callable[[], str]) -> str | None:
        """A `say:` rendered for the user, or None (the failure logged) when it fails."""
        try:
            return rendered(self.qualified(), "say", render)
        except StepRenderFailed as failure:
            self._emit(failure.event.kind, **failure.event.data)
            return None

    def _arrive(self, source: str, outcome: Move | Enter, *, visit: bool = True) -> None:
        target = self.qualified()
        if visit:
            self.snap.visits[target] = self.snap.visits.get(target, 0) + 1
        self.snap.entered = True
        self._transition(source, target, outcome)
        if visit:
            strategy = getattr(self.current_state(), "context", "keep")
            self._effects(apply_context(strategy, self.prompter, self.deps.model, target))

    def _transition(self, source: str, target: str, outcome: Move | Enter) -> None:
        self.snap.transitions += 1
        self._emit(
            "transition",
            **{"from": source, "to": target, "exit": outcome.exit_id},
            description=outcome.description,
            reason=outcome.reason,
        )

    def _limit_route(self, stop: Stop) -> tuple[str, str] | None:
        """(owning graph key, target) of the `on_limit` for this guard, once per turn."""
        if stop.guard is None or self.snap.limited:
            return None
        if stop.capped is not None:
            capped = self.current_graph().states.get(stop.capped)
            if capped is not None and capped.on_limit:
                return self.snap.frame.graph, capped.on_limit
        for frame in reversed(self.snap.stack):
            target = self.graphs.get(frame.graph).limits.on_limit.get(stop.guard)  # type: ignore[call-overload]
            if target:
                return frame.graph, target
        return None

    def _stop(self, stop: Stop) -> bool:
        """End the turn in the last user-facing state, with its fallback-or-authored text;
        or, when the graph says where a guard leads (`on_limit`), go there."""
        routed = self._limit_route(stop)
        if routed is not None:
            owner, target = routed
            self.snap.limited = True
            self._emit("guard", guard=stop.guard, detail=stop.detail, at=self.qualified(),
                       routed_to=target)  # fmt: skip
            reason = f"{stop.guard}: {stop.detail}"
            return self._move(Move("on_limit", target, f"on limit {stop.guard}", reason,
                                   owner=owner))  # fmt: skip
        here = self.qualified()
        self.snap.back_to_user_facing()
        graph, state = self.current_graph(), self.current_state()
        authored = ""
        if stop.guard is not None:
            authored = (
                self._said(lambda: authored_reply(state, self._templates(), self.qualified())) or ""
            )
            self._emit(
                "guard", guard=stop.guard, detail=stop.detail, at=here, stopped_in=self.qualified()
            )
        text, failed = fallback(graph, state, self.qualified(), self._templates(), authored)
        self._effects(failed)
        return self._end(text, self.qualified(), stop.fallback, guard=stop.guard)

    def _end(self, text: str, state: str, fallback: bool, guard: str | None = None) -> bool:
        snap = self.snap
        text = " ".join(t for t in (*snap.said, text) if t)
        tags = list(getattr(self.current_state(), "message_metadata", ()))
        self._emit("reply", text=text, state=state, fallback=fallback, metadata=tags)
        self._emit(
            "turn_completed",
            state=self.qualified(),
            completed=snap.completed,
            guard=guard,
            transitions=snap.transitions,
        )
        snap.pending = None
        self._commit(checkpoint=snap.turn)
        return True

    # ----- what a step sees ---------------------------------------------------------------

    def _context(self) -> StepContext:
        return StepContext(
            self._view(),
            self.graphs,
            self.prompter,
            self.deps.model,
            self.memory,
            self._record_intent,
        )

    def _view(self) -> View:
        log, snap = self.log, self.snap
        so_far = log.turn_so_far(snap.turn)
        return view_of(snap, log.transcript, so_far, self.deps.session_id, self.deps.user_id)

    def _templates(self) -> dict[str, Any]:
        return template_context(self._view(), self.current_graph(), self.snap.frame.state)

    def _record_intent(self, intent: Emit) -> None:
        self._emit(intent.kind, **intent.data)
        self._commit()

    # ----- after a turn, and taking turns back --------------------------------------------

    def extraction_pending(self) -> bool:
        """The latest turn finished and its memories, wanted, were not extracted yet."""
        snap = self.snap
        if not snap.turn or snap.pending is not None:
            return False
        if not self.memory.wants_extraction(snap.completed):
            return False
        return not any(log_view.is_extraction(e) for e in self.log.turn_events(snap.turn))

    def extract_memories(self) -> None:
        """One `extract` question over the turn (or the session), stored, then committed."""
        if not self.extraction_pending():
            return
        here, root = self.qualified(), self.deps.graph
        every_turn = root.memory.store == "every_turn"
        history = this_turn(self.log.transcript) if every_turn else self.prompter.history()[0]
        request = self.prompter.build(
            self._view(),
            "extract",
            graph=root,
            state_id=here,
            state=self.current_state(),
            history=history,
        )
        asked = ask(self.deps.model, request)
        self._effects(self.memory.store_extracted(asked, here, self.snap.turn))
        self._commit()

    def rewind(self, number: int, *, cancelled: bool) -> None:
        """Take back turn `number` (the latest): back to the checkpoint before it."""
        saved = self.deps.store.checkpoint(self.deps.session_id, number - 1)
        if saved is None:
            raise SessionError(
                f"no checkpoint before turn {number} of session `{self.deps.session_id}`"
            )
        if not cancelled:
            stored = [e for e in self.log.turn_events(number) if e.kind == "memory_stored"]
            ids = [m["id"] for e in stored for m in e.data.get("memories", [])]
            self._effects(self.memory.forget(ids))
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
