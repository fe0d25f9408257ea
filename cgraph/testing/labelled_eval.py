"""How a chooser's decisions on labelled sets are counted (`cgraph.testing.labelled`).

Each labelled case expects an exit id or `stay`. A decision is *right* when it is what was
expected; *clarify* when the chooser asked which exit was meant (a question is no move: it
is neither right nor wrong, and is counted apart); otherwise *wrong*: a wrong exit, or
staying when an exit was meant. A wrong decision that takes an exit to END is a *wrongly
ended* session (so is one into a silent state that goes on to END, an emergency
that says its words and ends).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cgraph.runtime.ports import CLARIFY, ExitChooser, Question
from cgraph.spec.names import END
from cgraph.testing.labelled import Case, graph_of, question_for


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    chosen: str
    ends: bool = False
    """The chosen exit leads to END."""
    has_examples: bool = True
    """The expected exit has `examples:` (for an exit expected)."""

    @property
    def verdict(self) -> str:
        if self.chosen == self.case.expect:
            return "right"
        return "clarify" if self.chosen == CLARIFY else "wrong"

    @property
    def wrongly_ended(self) -> bool:
        return self.verdict == "wrong" and self.ends


@dataclass(frozen=True, slots=True)
class Figures:
    turns: int
    right: int
    wrong: int
    clarify: int
    ended: int = 0

    def line(self) -> str:
        n = max(self.turns, 1)
        return (
            f"{self.turns:4d} turns  right {self.right:4d} ({self.right / n:6.1%})  "
            f"wrong {self.wrong:3d} ({self.wrong / n:5.1%})  "
            f"clarify {self.clarify:3d} ({self.clarify / n:5.1%})  wrongly ended {self.ended}"
        )


def figures(outcomes: Iterable[Outcome]) -> Figures:
    verdicts = [(o.verdict, o.wrongly_ended) for o in outcomes]
    count = {k: sum(v == k for v, _ in verdicts) for k in ("right", "wrong", "clarify")}
    return Figures(len(verdicts), **count, ended=sum(e for _, e in verdicts))


def breakdown(outcomes: Sequence[Outcome]) -> dict[str, Figures]:
    """Figures overall, per labelled kind, and for exits expected with or without
    examples."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups["overall"].append(outcome)
        if outcome.case.label:
            groups[f"kind {outcome.case.label}"].append(outcome)
        if outcome.case.expect != "stay":
            examples = "with" if outcome.has_examples else "without"
            groups[f"exit {examples} examples"].append(outcome)
        else:
            groups["stay expected"].append(outcome)
    return {key: figures(group) for key, group in groups.items()}


def outcome(case: Case, question: Question, chosen: str) -> Outcome:
    """The outcome of choosing `chosen` at `question` (the case's question)."""
    options = {o.id: o for o in question.options}
    picked = options.get(chosen)
    expected = options.get(case.expect)
    return Outcome(
        case,
        chosen,
        ends=chosen == END or (picked is not None and _ends(case, picked.target)),
        has_examples=bool(expected.examples) if expected is not None else True,
    )


def _ends(case: Case, target: str) -> bool:
    """`target` is END, or a silent state whose one way on leads there (an emergency
    annotation that says its words and ends): the session ends before the user speaks."""
    states = graph_of(case).states
    for _ in range(len(states) + 1):
        if target == END:
            return True
        state = states.get(target)
        following = state.next_state if state is not None else None
        if state is None or state.type == "action" or not isinstance(following, str):
            return False
        target = following
    return False


def run_chooser(chooser: ExitChooser, cases: Sequence[Case]) -> list[Outcome]:
    """Each case's question put to `chooser`."""
    found = []
    for case in cases:
        question = question_for(case)
        found.append(outcome(case, question, chooser.choose(question).exit))
    return found
