"""Applying one step's outcome: its effects, the guards, then the move, the stop or the end.

The engine hands each outcome a handler returned to an `Applier`, which changes the
snapshot (the stack rules are `cgraph.runtime.turn.moves`) and emits what the log keeps: the
transition, a guard that stopped or rerouted the turn, the reply and the turn's end. It
never commits: the engine commits the step once the outcome is applied.
"""

from __future__ import annotations

from typing import Any

from cgraph.runtime.ask.history import apply_context
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.log.events import EventLog
from cgraph.runtime.ports import ChatModel
from cgraph.runtime.routes.failures import fallback
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.outcomes import Effects, Enter, Move, Outcome, Reply, Stop
from cgraph.runtime.state.records import EventKind
from cgraph.runtime.state.snapshot import Snapshot, here
from cgraph.runtime.turn import replies
from cgraph.runtime.turn.guards import guard, limit_route, stay_guard
from cgraph.runtime.turn.moves import Arrival, current, enter, move
from cgraph.runtime.turn.replies import Templates
from cgraph.spec.names import END


class Applier:
    """Applies one outcome to `snap`; `templates` renders the current state's words."""

    __slots__ = ("graphs", "log", "model", "prompter", "snap", "templates")

    def __init__(
        self,
        snap: Snapshot,
        graphs: Graphs,
        log: EventLog,
        prompter: Prompter,
        model: ChatModel,
        templates: Templates,
    ) -> None:
        self.snap, self.graphs, self.log = snap, graphs, log
        self.prompter, self.model, self.templates = prompter, model, templates

    def apply(self, outcome: Outcome) -> bool:
        """Apply an outcome and its effects; True when the turn is over."""
        self._effects(outcome.effects)
        if isinstance(outcome, Reply):
            stop = stay_guard(self.graphs, self.snap)
            if stop is not None:
                return self._stop(stop)
            return self._end(outcome.text, here(self.snap), outcome.fallback)
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
            (graph, state), at = current(self.snap, self.graphs), here(self.snap)
            spoke = bool(self.snap.said)
            closing, failed = replies.closing(graph, state, spoke, at, self.templates)
        self._effects(failed)
        self._arrive(arrival, outcome)
        self.snap.completed = True
        return self._end(closing, END, False)

    def _arrive(self, arrival: Arrival, outcome: Move | Enter) -> bool:
        self.snap.transitions += 1
        moved = {"from": arrival.source, "to": arrival.target, "exit": outcome.exit_id}
        self._emit("transition", **moved, description=outcome.description, reason=outcome.reason)
        if arrival.entered:
            strategy = getattr(current(self.snap, self.graphs)[1], "context", "keep")
            self._effects(apply_context(strategy, self.prompter, self.model, arrival.target))
        return False

    def _stop(self, stop: Stop) -> bool:
        """End the turn in the last user-facing state, with its fallback-or-authored text;
        or, when the graph says where a guard leads (`on_limit`), go there."""
        at = here(self.snap)
        routed = limit_route(stop, self.graphs, self.snap)
        if routed is not None:
            owner, target = routed
            self.snap.limited = stop.guard
            self._emit("guard", guard=stop.guard, detail=stop.detail, at=at, routed_to=target)
            reason = f"{stop.guard}: {stop.detail}"
            limited = Move("on_limit", target, f"on limit {stop.guard}", reason, owner=owner)
            return self._go(limited)
        self.snap.back_to_user_facing()
        (graph, state), there = current(self.snap, self.graphs), here(self.snap)
        authored = ""
        if stop.guard is not None:
            words, failed = replies.said_by(state, there, self.templates)
            self._effects(failed)
            authored = words or ""
            self._emit("guard", guard=stop.guard, detail=stop.detail, at=at, stopped_in=there)
        text, failed = fallback(graph, state, there, self.templates(), authored)
        self._effects(failed)
        return self._end(text, there, stop.fallback, guard=stop.guard)

    def _end(self, text: str, state: str, fallback: bool, guard: str | None = None) -> bool:
        snap = self.snap
        text = " ".join(t for t in (*snap.said, text) if t)
        tags = list(getattr(current(snap, self.graphs)[1], "message_metadata", ()))
        self._emit("reply", text=text, state=state, fallback=fallback, metadata=tags)
        # A guard that stopped the turn, else the one whose `on_limit` route it took.
        guard = guard or snap.limited
        ended = {"completed": snap.completed, "guard": guard, "transitions": snap.transitions}
        self._emit("turn_completed", state=here(snap), **ended)
        snap.pending, snap.turns_here = None, snap.turns_here + 1
        return True

    def _effects(self, effects: Effects) -> None:
        self.log.record(self.snap, effects)

    def _emit(self, kind: EventKind, /, **data: Any) -> None:
        self.log.emit(kind, self.snap.turn, data)
