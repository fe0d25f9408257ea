"""What a step handler returns: where the session goes next, and the effects of the step.

A handler never changes the session. It returns an outcome — `Move` (take an exit),
`Enter` (start a graph or sub-graph), `Reply` (the turn ends here) or `Stop` (a guard or a
failure ends the turn in the last user-facing state) — carrying the step's effects in the
order they happened; the engine applies the effects, then the outcome, and commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cgraph.runtime.state.records import Decision, EventKind
from cgraph.runtime.state.snapshot import HistoryMarks


@dataclass(frozen=True, slots=True)
class Emit:
    """An event for the log, as it is (a recall, a tool call, a model failure)."""

    kind: EventKind
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SetVariables:
    values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class AddNote:
    note: str


@dataclass(frozen=True, slots=True)
class AddTags:
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CountReflection:
    """One more reflection this turn (the `max_reflections` guard counts them)."""


@dataclass(frozen=True, slots=True)
class MarkUserFacing:
    """The current state talks to the user: a guard later in the turn stops here."""


@dataclass(frozen=True, slots=True)
class Say:
    """A line added to the turn's reply, before its end: a silent state's `say:`, a
    confirmed correction's `correction_reply`."""

    text: str


@dataclass(frozen=True, slots=True)
class TakeMessage:
    """The message that entered a sub-graph this turn is read by the state asking now."""


@dataclass(frozen=True, slots=True)
class SetMarks:
    """The history window moved, or its summary or context changed (`ask.history`)."""

    marks: HistoryMarks


Effect = (
    Emit
    | SetVariables
    | AddNote
    | AddTags
    | CountReflection
    | MarkUserFacing
    | Say
    | SetMarks
    | TakeMessage
)
Effects = tuple[Effect, ...]


def decided(decision: Decision) -> Emit:
    """The log entry of a choice, by the model or by the engine."""
    return Emit("decision", dict(decision.__dict__))


@dataclass(frozen=True, slots=True)
class Move:
    exit_id: str
    target: str
    description: str
    reason: str
    reply: str = ""
    """What an action state said as it left (used if the session ends this turn)."""
    effects: Effects = ()
    owner: str | None = None
    """For a global exit or `on_limit`: the key of the graph declaring it (its sub-graphs
    are left); None for the current state's own exits."""
    guard: str | None = None
    """For an `on_limit` route: the guard that took it."""
    capped: str | None = None
    """For a `max_visits` or `max_turns` route: the state capped (qualified)."""
    resume: bool = False
    """An interruption (`resume: true`): where the session is now is taken up again when
    the path it starts reaches `RESUME` (or the sub-graph it enters ends)."""
    drop: bool = False
    """The latest open interruption is closed, not gone back to (`drop: true`)."""
    handoff: bool = False
    """The message is handed on, unanswered, to the state entered (`handoff: true`)."""


@dataclass(frozen=True, slots=True)
class Enter:
    graph: str
    """The key of the graph entered ("" for the root)."""
    target: str
    exit_id: str
    description: str
    reason: str
    push: bool
    effects: Effects = ()
    slots: Mapping[str, Any] = field(default_factory=dict)
    """A sub-graph's slots as it starts: their defaults, then what its `graph` state
    passes in (`with:`)."""


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    fallback: bool = False
    effects: Effects = ()
    asked: tuple[str, ...] = ()
    """For a clarifying question: the exits it names (the next answer is judged against
    them first)."""
    correcting: Mapping[str, Any] = field(default_factory=dict)
    """For a correction asked about (`confirm_correction`): the values proposed."""
    clarifies: bool = False
    """A clarifying question: one more of the state's `clarifications`."""


@dataclass(frozen=True, slots=True)
class Stop:
    guard: str | None
    """The loop guard hit, or None when a failure (model, tool) stopped the turn."""
    detail: str
    fallback: bool = True
    effects: Effects = ()
    capped: str | None = None
    """For `max_visits` and `max_turns`: the state that may not be entered again or answer
    again (its `on_limit` routes)."""
    capped_at: str | None = None
    """The same state's qualified name, as the transition of its route records it."""


Outcome = Move | Enter | Reply | Stop
