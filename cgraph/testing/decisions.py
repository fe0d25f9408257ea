"""Per-decision accuracy of a test run: of the turns whose expectation says where the
conversation goes, how many went there.

A *decision* is a turn that ran and expects a `state` or `exits`. It is *right* when
those hold (and `clarified`, where expected); *asked* when the turn asked the user which
exit they meant instead, and the test did not expect it to ask (a question is no move:
neither right nor wrong, as on the labelled sets, `cgraph.testing.labelled_eval`); else
*wrong*: a wrong exit, or staying when an exit was meant. A run stops at its first failing
turn, so the turns after it decide nothing and are not counted; nor is a turn that expects
neither `state` nor `exits`, nor one in which nothing was chosen (its moves were all the
engine's: `when:` exits, a state passed through, a single way on).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cgraph.runtime.state.records import certainty
from cgraph.spec.testfile import Expect
from cgraph.testing.expectations import Mismatch
from cgraph.testing.observed import Observed

Verdict = Literal["right", "wrong", "asked"]
_JUDGED = frozenset({"state", "exits", "clarified"})
"""The expectations a decision is judged on."""


def verdict(expect: Expect, seen: Observed, mismatches: Sequence[Mismatch]) -> Verdict | None:
    """The turn's verdict as a decision; None when it expects no `state` or `exits`, or
    when nothing was chosen in it (every move was a `when:`, a filled state passed through
    or a single way on: the path decides, not the model)."""
    if expect.state is None and not expect.exits:
        return None
    if seen.decisions and not any(d.attempts for d in seen.decisions):
        return None
    if seen.clarified and expect.clarified is not True:
        return "asked"
    return "wrong" if any(m.key in _JUDGED for m in mismatches) else "right"


@dataclass(frozen=True, slots=True)
class Tally:
    """Decisions counted by verdict."""

    right: int = 0
    wrong: int = 0
    asked: int = 0

    @property
    def total(self) -> int:
        return self.right + self.wrong + self.asked

    @property
    def percent(self) -> float:
        """Share right, 0–100 (of no decisions: 0)."""
        return 100.0 * self.right / self.total if self.total else 0.0

    def line(self) -> str:
        """`41/44 right (93.2 %), 2 wrong, 1 asked`."""
        return (
            f"{self.right}/{self.total} right ({self.percent:.1f} %), "
            f"{self.wrong} wrong, {self.asked} asked"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "decisions": self.total,
            "right": self.right,
            "wrong": self.wrong,
            "asked": self.asked,
            "percent": round(self.percent, 1),
        }


def tally(verdicts: Iterable[Verdict | None]) -> Tally:
    found = [v for v in verdicts if v is not None]
    return Tally(found.count("right"), found.count("wrong"), found.count("asked"))


def choices(seen: Observed) -> list[str]:
    """Each choice of the turn that says how sure it was: `date (confidence 0.88)`,
    `clarify (asked the user)`; choices without a confidence are left out."""
    return [
        f"{d.chosen}{sure}" for d in seen.decisions if (sure := certainty(d.confidence, d.asked))
    ]
