"""Which exit an action state takes on its scores, with a reason whose numbers agree.

The best exit, less the question penalty when the message is a clarifying question it
does not expect, must clear a bar: the floor, and staying's score less the lead staying
needs. A weak best exit barely ahead of the next one is a guess and asks again. An exit
that ends the conversation needs `ending_floor` unless the message closes (`endings`);
below it the other exits are weighed without it. The reason states the score the choice
was made on (bonuses and penalties included) and the bar it faced, so it never says that
a lower score won: "closest to END (score 0.26 ≥ 0.15: floor 0.15, stay 0.29 − 0.20)". It
says "score", not similarity: bonuses (a denial, a bare "no, …") can lift it past 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from cgraph.backends.llm.calibration import Calibration
from cgraph.runtime.ports import STAY


@dataclass(frozen=True, slots=True)
class Choice:
    """An action state's choice: an exit id or `stay`, and why."""

    exit: str
    reason: str


def choose(
    scores: Mapping[str, float],
    stay_score: float,
    cal: Calibration,
    *,
    answers: Set[str],
    guarded: Set[str] = frozenset(),
    allow_stay: bool = True,
) -> Choice:
    """The calibrated rule: the best exit, unless it falls short of the bar, is a weak
    guess, or would end the conversation on a weak score (`guarded`). `answers` are the
    exits the message may take at full score; the others pay the question penalty."""
    best = max(scores, key=lambda k: scores[k])
    effective = scores[best] - (0.0 if best in answers else cal.question_penalty)
    said = _score(scores[best], effective)
    bar = max(cal.floor, stay_score - cal.stay_lead)
    against = f"{bar:.2f}: floor {cal.floor:.2f}, stay {stay_score:.2f} − {cal.stay_lead:.2f}"
    if not allow_stay:
        return Choice(best, f"closest to {best} ({said}; staying is not allowed)")
    if best in guarded and effective < cal.ending_floor:
        weak = f"{best} {said} is too weak to end the conversation (< {cal.ending_floor:.2f})"
        rest = {k: v for k, v in scores.items() if k not in guarded}
        if not rest:
            return Choice(STAY, f"{weak}: asked again")
        other = choose(rest, stay_score, cal, answers=answers)
        return Choice(other.exit, f"{weak}; {other.reason}")
    if effective < bar:
        return Choice(STAY, f"no exit is close enough (best {best} {said} < {against})")
    runner_up = max(((v, k) for k, v in scores.items() if k != best), default=(-1.0, ""))
    if effective < cal.unsure_below and scores[best] - runner_up[0] < cal.unsure_margin:
        guess = f"{best} {said} against {runner_up[1]} {runner_up[0]:.2f}"
        return Choice(STAY, f"a weak near-tie ({guess}): asked again")
    return Choice(best, f"closest to {best} ({said} ≥ {against})")


def _score(raw: float, effective: float) -> str:
    """The score a choice was made on, showing the question penalty when one was paid;
    above 1 it says so, lest it be read as a similarity."""
    lifted = " with its bonuses" if raw > 1 else ""
    if raw == effective:
        return f"score {raw:.2f}{lifted}"
    return f"score {raw:.2f}{lifted} − {raw - effective:.2f} for a question = {effective:.2f}"
