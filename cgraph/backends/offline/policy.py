"""From the scorer's confidences to a choice: take an exit, stay, or ask which was meant.

- The best exit is taken when it is confident enough (`take_floor`) and clearly ahead of
  the runner-up (`ask_margin`). An exit that cannot be taken back (`irreversible`: to END,
  into a side effect, out of a flow) needs `irreversible_floor`, more than staying, which
  the next message can always undo; one to END needs `end_floor` where that is more. A
  global exit below `global_floor` is neither taken nor asked about: the chooser stays.
- Otherwise the chooser asks: a clarifying question naming the best exit and, when it is
  close, the runner-up; but only from `ask_floor`: below it no exit is likely enough to
  ask about, and the chooser stays. When staying wins only narrowly over an exit (`stay_margin`), it
  asks about that exit rather than guess either way.
- An exit marked `confirm: true` is always asked about first.
- Where the designer turned asking off (`may_clarify=False`), or the previous turn already
  asked, the chooser never asks: it takes the best exit, except an irreversible one below
  its bar, where it stays.
- An answer to a clarifying question is judged against the candidates it named first
  (`answer`): "the first one", "yes" (to a question about one exit), or the candidate
  the message is likeliest to mean among those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.backends.offline.reading import leading_answer
from cgraph.runtime.ports import CLARIFY, STAY, ExitOption, Question


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the policy decided, and why, as data (`reasons` renders it)."""

    exit: str
    kind: str
    """Which rule decided: `confident`, `unsure`, `close`, `stay`, `near_stay`,
    `nothing_clear`, `global_unsure`, `irreversible`, `confirm`, `only_choice`,
    `answer_ordinal`, `answer_yes`, `answer_no`, `answer_best`."""
    best: str
    confidence: float
    runner_up: str = ""
    runner_up_confidence: float = 0.0
    bar: float = 0.0
    candidates: tuple[str, ...] = ()


def decide(question: Question, confidence: Mapping[str, float], cal: Calibration) -> Verdict:
    """The choice among `confidence`'s candidates (option ids and `stay`)."""
    ranked = sorted(confidence, key=lambda k: -confidence[k])
    best = ranked[0]
    second = ranked[1] if len(ranked) > 1 else ""
    p1, p2 = confidence[best], confidence.get(second, 0.0)
    facts = Verdict(STAY, "stay", best, p1, second, p2)
    options = {o.id: o for o in question.options}
    may_ask = _may_ask(question)
    if best == STAY:
        if may_ask and second in options and p1 - p2 < cal.stay_margin:
            return replace(
                facts, exit=CLARIFY, kind="near_stay", bar=cal.stay_margin, candidates=(second,)
            )
        return replace(facts, exit=STAY, kind="stay")
    option = options[best]
    bar = _bar(option, cal)
    if not question.allow_stay:
        return replace(facts, exit=best, kind="only_choice")
    if option.anywhere and p1 < cal.global_floor:
        return replace(facts, exit=STAY, kind="global_unsure", bar=cal.global_floor)
    if option.confirm and may_ask:
        return replace(facts, exit=CLARIFY, kind="confirm", bar=1.0, candidates=(best,))
    if p1 >= bar and p1 - p2 >= cal.ask_margin:
        return replace(facts, exit=best, kind="confident", bar=bar)
    if may_ask and p1 < cal.ask_floor:
        return replace(facts, exit=STAY, kind="nothing_clear", bar=cal.ask_floor)
    if may_ask:
        named = (best, second) if second in options and p2 >= cal.candidate_floor else (best,)
        kind = "close" if p1 >= bar else "unsure"
        return replace(facts, exit=CLARIFY, kind=kind, bar=bar, candidates=named)
    if bar > cal.take_floor and p1 < bar:
        return replace(facts, exit=STAY, kind="irreversible", bar=bar)
    return replace(facts, exit=best, kind="unsure", bar=bar)


def _bar(option: ExitOption, cal: Calibration) -> float:
    """What `option` needs to be taken without asking: more when it ends the session or
    cannot be taken back."""
    if not option.irreversible:
        return cal.take_floor
    floor = max(cal.irreversible_floor, cal.take_floor)
    return max(floor, cal.end_floor) if option.target == "END" else floor


def _may_ask(question: Question) -> bool:
    """Asking is allowed here: an action state that may stay, whose designer lets it ask,
    and whose previous turn did not ask already (a user is asked once, not in a loop)."""
    return (
        question.kind == "action"
        and question.allow_stay
        and question.may_clarify
        and not question.clarifying
    )


def answer(question: Question, confidence: Mapping[str, float], cal: Calibration) -> Verdict | None:
    """The candidate an answer to last turn's clarifying question points to, or None when
    it points to none of them (the message is then judged like any other)."""
    named = [c for c in question.clarifying if c in confidence and c != STAY]
    if not named or not question.user_messages:
        return None
    message = question.user_messages[-1]
    picked = _ordinal(message, named)
    if picked:
        return Verdict(picked, "answer_ordinal", picked, 0.0, candidates=tuple(named))
    said = leading_answer(message)
    if len(named) == 1 and said:
        chosen = named[0] if said > 0 else STAY
        kind = "answer_yes" if said > 0 else "answer_no"
        return Verdict(chosen, kind, named[0], 0.0, candidates=tuple(named))
    among = {c: confidence[c] for c in named}
    if STAY in confidence:
        among[STAY] = confidence[STAY]
    total = sum(among.values()) or 1.0
    best = max(among, key=lambda k: among[k])
    share = among[best] / total
    if best != STAY and share >= cal.answer_floor and share >= max(among.values()) / total:
        return Verdict(
            best, "answer_best", best, share, bar=cal.answer_floor, candidates=tuple(named)
        )
    return None


def _ordinal(message: str, named: list[str]) -> str:
    """ "the first one", "the second", "the latter": the candidate at that place."""
    if len(named) < 2 or len(message.split()) > 6:
        return ""
    found = lx.ORDINAL.search(message)
    if found is None:
        return ""
    place = lx.ORDINALS[found.group().lower()]
    return named[place] if -len(named) <= place < len(named) else ""


def irreversible_ids(options: tuple[ExitOption, ...]) -> frozenset[str]:
    return frozenset(o.id for o in options if o.irreversible)
