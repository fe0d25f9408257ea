"""What one turn did, as plain data the expectations are checked against."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cgraph.runtime.state.records import Decision, TransitionRecord, Turn, certainty
from cgraph.spec.names import END


@dataclass(frozen=True, slots=True)
class Observed:
    """One turn as a test sees it: `state` is `END` once the conversation is over."""

    user: str
    reply: str
    state: str
    path: tuple[str, ...]
    exits: tuple[tuple[str, str], ...]
    """(state, exit id) of every exit taken, in order."""
    variables: dict[str, Any]
    annotations: tuple[str, ...]
    recalled: tuple[str, ...]
    stored: tuple[str, ...]
    completed: bool
    fallback: bool
    guard: str | None
    decisions: tuple[Decision, ...]
    transitions: tuple[TransitionRecord, ...] = ()
    """The turn's transitions as recorded (coverage tells global exits apart by them)."""
    steps: tuple[str, ...] = ()
    """Each decision's step in words (`cgraph.runtime.state.records.step_name`)."""
    clarified: bool = False
    """The reply asked which of a few exits the user meant."""
    interrupted: tuple[str, ...] = ()
    """The states open interruptions will go back to, the next last."""

    def exit_names(self) -> list[str]:
        return [f"{state} -> {exit_id}" for state, exit_id in self.exits]


def observe(
    turn: Turn,
    variables: dict[str, Any],
    annotations: Sequence[str],
    stored: tuple[str, ...] = (),
    steps: tuple[str, ...] = (),
) -> Observed:
    """The turn from `Session.send` with the session's variables, tags, the memories
    stored after it and its decisions' steps in words."""
    return Observed(
        user=turn.user or "",
        reply=turn.reply,
        state=END if turn.completed else turn.state,
        path=turn.path,
        exits=tuple((t.from_state, t.exit_id) for t in turn.transitions),
        variables=variables,
        annotations=tuple(annotations),
        recalled=tuple(m.text for m in turn.recalled),
        stored=stored,
        completed=turn.completed,
        fallback=turn.fallback,
        clarified=turn.clarified,
        interrupted=turn.interrupted,
        guard=turn.guard,
        decisions=turn.decisions,
        transitions=tuple(turn.transitions),
        steps=steps,
    )


def why(observed: Observed) -> list[str]:
    """The turn's `/why`: each decision's choice, candidates with scores, and reason."""
    lines = []
    for index, d in enumerate(observed.decisions):
        scored = ", ".join(_candidate(c, d.scores.get(c)) for c in d.candidates)
        step = observed.steps[index] if index < len(observed.steps) else f"{d.state} ({d.kind})"
        lines.append(f"{step} chose {d.chosen}{certainty(d.confidence, d.asked)}: {scored}")
        if d.reason:
            lines.append(f"  reason: {d.reason}")
    return lines


def _candidate(name: str, score: float | None) -> str:
    return name if score is None else f"{name} {score:.3f}"
