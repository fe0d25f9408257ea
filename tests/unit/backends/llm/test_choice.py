"""The chooser's rule on scores, and reasons whose numbers agree with the choice."""

from __future__ import annotations

import re

import pytest

from bench.semantic_cases import DEV, LABELS, load_cases, question_for
from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.calibration import Calibration
from cgraph.backends.llm.choice import choose
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import STAY
from tests.unit.backends.llm._chooser import answer_of

CAL = Calibration()
BOTH = frozenset({"a", "b"})
MOVES = frozenset({"quit", "next"})


def test_a_weak_near_tie_stays_and_a_clear_lead_does_not() -> None:
    assert choose({"a": 0.165, "b": 0.152}, 0.0, CAL, answers=BOTH).exit == STAY
    assert choose({"a": 0.19, "b": 0.12}, 0.0, CAL, answers=BOTH).exit == "a"
    # A strong best exit is taken however close the next one is.
    assert choose({"a": 0.61, "b": 0.6}, 0.0, CAL, answers=BOTH).exit == "a"
    assert choose({"a": 0.165, "b": 0.152}, 0.0, CAL, answers=BOTH, allow_stay=False).exit == "a"


def test_a_weak_ending_exit_gives_way_to_the_others_or_to_staying() -> None:
    weak = {"quit": 0.16, "next": 0.08}
    assert choose(weak, 0.14, CAL, answers=MOVES, guarded={"quit"}).exit == STAY
    moving = {"quit": 0.25, "next": 0.22}
    chosen = choose(moving, 0.14, CAL, answers=MOVES, guarded={"quit"})
    assert chosen.exit == "next" and "too weak to end the conversation" in chosen.reason
    # A clear ending, or one the message closes with (nothing guarded), is taken.
    clear = {"quit": 0.45, "next": 0.1}
    assert choose(clear, 0.2, CAL, answers=MOVES, guarded={"quit"}).exit == "quit"
    assert choose(weak, 0.14, CAL, answers=MOVES).exit == "quit"


def test_the_reason_states_the_score_after_the_question_penalty() -> None:
    chosen = choose({"a": 0.5, "b": 0.1}, 0.1, CAL, answers=frozenset())
    assert chosen.exit == "a" and "score 0.50 − 0.30 for a question = 0.20 ≥ 0.15" in chosen.reason


def test_the_reason_calls_its_number_a_score_and_one_above_1_lifted_by_bonuses() -> None:
    chosen = choose({"a": 1.51, "b": 0.1}, 0.16, CAL, answers=BOTH)
    floor = "0.15: floor 0.15, stay 0.16 − 0.20"
    assert chosen.reason == f"closest to a (score 1.51 with its bonuses ≥ {floor})"
    plain = choose({"a": 0.83, "b": 0.1}, 0.16, CAL, answers=BOTH)
    assert plain.reason == f"closest to a (score 0.83 ≥ {floor})"


_SCORE = r"score (?:.* = )?(-?\d\.\d\d)(?: with its bonuses)?"
_TAKEN = re.compile(rf"^closest to (\S+) \({_SCORE} ≥ (\d\.\d\d): .*stay (-?\d\.\d\d)")
_STAYED = re.compile(rf"no exit is close enough \(best (\S+) {_SCORE} < (-?\d\.\d\d)")


@pytest.mark.slow
def test_every_reason_agrees_with_its_choice_on_the_labelled_sets() -> None:
    model = SemanticModel(embedder=shared_embedder())
    checked = 0
    for case in load_cases(LABELS) + load_cases(DEV)[:150]:
        request = question_for(case)
        if request.kind != "action":
            continue
        answer = answer_of(model, request)
        reason = answer["reason"].removeprefix("global exit: ")
        taken, stayed = _TAKEN.search(reason), _STAYED.search(reason)
        if answer["exit"] != STAY and taken:
            assert taken[1] == answer["exit"], reason
            score, bar, stay = (float(taken[i]) for i in (2, 3, 4))
            assert score >= bar >= max(CAL.floor, round(stay - CAL.stay_lead, 2)), reason
            assert abs(answer["scores"][answer["exit"]] - score) < 0.006 or "question" in reason
            checked += 1
        elif answer["exit"] == STAY and stayed:
            assert float(stayed[2]) < float(stayed[3]), reason
            checked += 1
        else:  # every other reason names a rule of its own, never a score that lost
            assert not reason.startswith("closest to"), reason
    assert checked > 150
