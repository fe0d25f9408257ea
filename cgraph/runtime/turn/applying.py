"""The one writer of a session's state: an outcome (or effects) applied makes the next state.

The engine hands each outcome a handler returned to the `Applier`, which applies its effects,
checks it against the graph and the loop guards (`guards`), moves the session (the stack
rules are `moves`) and says what the log keeps: the transition, a guard that stopped or
rerouted the turn, the reply and the turn's end. It returns the next state and those events
(`Applied`); it never writes to the log or the store (the engine emits and commits), and
nothing else makes a new state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from cgraph.runtime.routes.failures import fallback
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import routed
from cgraph.runtime.state.outcomes import (
    AddNote,
    AddTags,
    CountReflection,
    Effects,
    Emit,
    Enter,
    MarkUserFacing,
    Move,
    Outcome,
    Reply,
    Say,
    SetMarks,
    SetVariables,
    Stop,
    TakeMessage,
)
from cgraph.runtime.state.records import EventKind
from cgraph.runtime.state.snapshot import MAX_NOTES, SessionState, TurnScratch
from cgraph.runtime.turn import replies
from cgraph.runtime.turn.guards import guard, limit_route, stay_guard
from cgraph.runtime.turn.moves import Arrival, current, enter, move
from cgraph.spec.names import END

Templates = Callable[[SessionState], dict[str, Any]]
"""The template context of a state's current state (built only when a `say:` renders)."""


@dataclass(frozen=True, slots=True)
class Applied:
    """The next state, the events the log keeps of the change, and whether the turn ended."""

    state: SessionState
    events: tuple[Emit, ...] = ()
    done: bool = False


class Applier:
    """Makes a session's next states; see the module docstring."""

    __slots__ = ("graphs", "templates")

    def __init__(self, graphs: Graphs, templates: Templates) -> None:
        self.graphs, self.templates = graphs, templates

    def begin(self, state: SessionState, message: str, said: dict[str, Any]) -> Applied:
        """A new turn: its number, its scratch, and the user's message for the log."""
        begun = state._replace(turn=state.turn + 1, scratch=TurnScratch(pending=message))
        return Applied(begun, (Emit("user_message", said),))

    def effects(self, state: SessionState, effects: Effects) -> Applied:
        """Effects outside a step's outcome (history, memory extraction, an undo's forget)."""
        events: list[Emit] = []
        return Applied(self._effects(state, effects, events), tuple(events))

    def apply(self, state: SessionState, outcome: Outcome) -> Applied:
        """Apply a step's outcome and its effects; `done` when the turn is over."""
        events: list[Emit] = []
        state = self._effects(state, outcome.effects, events)
        state, done = self._outcome(state, outcome, events)
        return Applied(state.with_scratch(step=state.scratch.step + 1), tuple(events), done)

    def _outcome(
        self, state: SessionState, outcome: Outcome, events: list[Emit]
    ) -> tuple[SessionState, bool]:
        # A clarifying question (or a correction asked about) is answered by the next
        # message, in this state, or never.
        if isinstance(outcome, Reply):
            state = state._replace(asked=outcome.asked, correcting=outcome.correcting)
        elif state.asked or state.correcting:
            state = state._replace(asked=(), correcting={})
        if isinstance(outcome, Reply):
            stop = stay_guard(self.graphs, state)
            if stop is not None:
                return self._stop(state._replace(asked=(), correcting={}), stop, events)
            if outcome.clarifies:  # counted in this state
                state = state._replace(clarifications=state.clarifications + 1)
            return self._end(state, outcome.text, state.here, outcome.fallback, events), True
        if isinstance(outcome, Stop):
            return self._stop(state, outcome, events)
        stop = guard(outcome, self.graphs, state)
        if stop is not None:
            return self._stop(state, stop, events)
        return self._go(state, outcome, events)

    def _go(
        self, state: SessionState, outcome: Move | Enter, events: list[Emit]
    ) -> tuple[SessionState, bool]:
        if isinstance(outcome, Enter):
            if outcome.push and state.scratch.pending:  # its first state reads the message
                state = state.with_scratch(offered=True)
            return self._arrive(*enter(state, self.graphs, outcome), outcome, events), False
        moved, arrival = move(state, self.graphs, outcome)
        if arrival.target != END:
            return self._arrive(moved, arrival, outcome, events), False
        closing = outcome.reply
        if not closing:  # the ending state's words, read before the session leaves it
            (graph, spec), at = current(moved, self.graphs), moved.here
            spoke = bool(moved.scratch.said)
            said = partial(self.templates, moved)
            fresh = state.scratch.entered
            closing, failed = replies.closing(graph, spec, spoke, at, said, fresh)
            moved = self._effects(moved, failed, events)
        moved = self._arrive(moved, arrival, outcome, events)._replace(completed=True)
        return self._end(moved, closing, END, False, events), True

    def _arrive(
        self, state: SessionState, arrival: Arrival, outcome: Move | Enter, events: list[Emit]
    ) -> SessionState:
        moved: dict[str, Any] = {"from": arrival.source, "to": arrival.target}
        moved |= {"exit": outcome.exit_id, "description": outcome.description}
        moved["reason"] = outcome.reason
        if isinstance(outcome, Move) and outcome.guard is not None:
            moved |= {"guard": outcome.guard, "capped": outcome.capped}
        if isinstance(outcome, Move) and outcome.resume:
            moved["interrupts"] = True  # where it left is taken up again later
        if isinstance(outcome, Move) and outcome.drop:
            moved["drops"] = True  # the latest interruption is closed
        if state.scratch.handed and arrival.entered:
            moved["hands_off"] = True  # the state entered reads the message as its own
        if arrival.resumed:
            moved["resumed"] = True
        events.append(Emit("transition", moved))
        context = state.scratch.context
        if arrival.entered:  # its `context:` applies before its first step (`ask.history`)
            strategy = getattr(current(state, self.graphs)[1], "context", "keep")
            context = None if strategy == "keep" else strategy
        return state.with_scratch(transitions=state.scratch.transitions + 1, context=context)

    def _stop(
        self, state: SessionState, stop: Stop, events: list[Emit]
    ) -> tuple[SessionState, bool]:
        """End the turn in the last user-facing state, with its fallback-or-authored text;
        or, when the graph says where a guard leads (`on_limit`), go there."""
        at = state.here
        routed = limit_route(stop, self.graphs, state)
        if routed is not None and stop.guard is not None:
            owner, target = routed
            state = state.with_scratch(limited=stop.guard)
            events.append(Emit("guard", _guarded(stop, at, routed_to=target)))
            reason = f"{stop.guard}: {stop.detail}"
            limited = Move(
                "on_limit",
                target,
                f"on limit {stop.guard}",
                reason,
                owner=owner,
                guard=stop.guard,
                capped=stop.capped_at,
            )
            return self._go(state, limited, events)
        if state.last_action:
            state = state._replace(stack=state.last_action)
        state = state.with_scratch(entered=False)
        (graph, spec), there = current(state, self.graphs), state.here
        authored = ""
        templates = partial(self.templates, state)
        if stop.guard is not None:
            words, failed = replies.said_by(spec, there, templates)
            state = self._effects(state, failed, events)
            authored = words or ""
            events.append(Emit("guard", _guarded(stop, at, stopped_in=there)))
        text, failed = fallback(graph, spec, there, templates(), authored)
        state = self._effects(state, failed, events)
        return self._end(state, text, there, stop.fallback, events, guard=stop.guard), True

    def _end(
        self,
        state: SessionState,
        text: str,
        where: str,
        fallback: bool,
        events: list[Emit],
        guard: str | None = None,
    ) -> SessionState:
        text = " ".join(t for t in (*state.scratch.said, text) if t)
        tags = list(getattr(current(state, self.graphs)[1], "message_metadata", ()))
        events.append(
            Emit("reply", {"text": text, "state": where, "fallback": fallback, "metadata": tags})
        )
        # A guard that stopped the turn, else the one whose `on_limit` route it took.
        guard = guard or state.scratch.limited
        transitions = state.scratch.transitions
        ended: dict[str, Any] = {"completed": state.completed, "guard": guard}
        ended["transitions"] = transitions
        if state.interrupted:
            ended["interrupted"] = list(state.waiting)
        if state.asked:
            ended["clarified"] = list(state.asked)
        events.append(Emit("turn_completed", {"state": state.here, **ended}))
        return state._replace(turns_here=state.turns_here + 1).with_scratch(pending=None)

    def _effects(self, state: SessionState, effects: Effects, events: list[Emit]) -> SessionState:
        """Apply a step's effects, in order; what the log keeps of them goes to `events`."""
        here = state.here
        for effect in effects:
            if isinstance(effect, Emit):
                state, kept = _noted(state, effect)
                events.append(kept)
            elif isinstance(effect, SetVariables):
                values = dict(effect.values)
                state = routed(state, self.graphs, values)
                events.append(_record("variables", here, values=values))
            elif isinstance(effect, AddNote):
                state = state._replace(notes=(*state.notes, effect.note)[-MAX_NOTES:])
                events.append(_record("note", here, note=effect.note))
            elif isinstance(effect, AddTags):
                new = tuple(t for t in effect.tags if t not in state.annotations)
                state = state._replace(annotations=(*state.annotations, *new))
                if effect.tags:
                    events.append(_record("annotation", here, tags=list(effect.tags)))
            elif isinstance(effect, CountReflection):
                state = state.with_scratch(reflections=state.scratch.reflections + 1)
            elif isinstance(effect, MarkUserFacing):
                state = state._replace(last_action=state.stack)
            elif isinstance(effect, Say):
                state = state.with_scratch(said=(*state.scratch.said, effect.text))
            elif isinstance(effect, SetMarks):
                state = state._replace(marks=effect.marks).with_scratch(context=None)
            elif isinstance(effect, TakeMessage):
                state = state.with_scratch(offered=False)
        return state


def _record(kind: EventKind, here: str, **data: Any) -> Emit:
    return Emit(kind, {"state": here, **data})


def _guarded(stop: Stop, at: str, **where: str) -> dict[str, Any]:
    return {"guard": stop.guard, "detail": stop.detail, "at": at, **where}


def _noted(state: SessionState, effect: Emit) -> tuple[SessionState, Emit]:
    """A lasting note (a model that calls no tools, said at a skipped call) is a turn's
    warning once a session: given again, it is marked `repeated`."""
    if effect.kind != "tool_call" or effect.data.get("status") != "skipped":
        return state, effect
    note = str(effect.data.get("error", ""))
    if note in state.noted:
        return state, Emit(effect.kind, {**effect.data, "repeated": True})
    return state._replace(noted=(*state.noted, note)), effect
