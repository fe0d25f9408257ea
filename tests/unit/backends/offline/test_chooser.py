"""The offline chooser: confidences, the ask policy, answers to its questions, reasons as
data, silent states and slots."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cgraph.backends.offline.asking import clarifying_question
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.policy import answer, decide
from cgraph.backends.offline.silent import decide_silently
from cgraph.runtime.ask.choosing import decide as runtime_decide
from cgraph.runtime.needs import drive
from cgraph.runtime.ports import CLARIFY, STAY, ExitOption, Question
from cgraph.testing.labelled import question_for
from tests.support.labelled_sets import DEV, LABELS, load_cases
from tests.unit.backends.offline._chooser import action, choice, chooser

GO = ExitOption("go", "The user is ready to start.", "go", ("Yes, I'm ready.", "Let's start."))
END = ExitOption("END", "The user wants to stop.", "END", ("Stop, I want to quit.",))
DATE = ExitOption("date", "The customer wants to change the date of the booking.", "date")
RESEND = ExitOption("resend", "The customer wants to have the tickets sent again.", "resend")
ASKED = "Ask whether the user is ready."
CAL = Calibration(take_floor=0.5, ask_margin=0.15, irreversible_floor=0.8, stay_margin=0.1)


def _question(*options: ExitOption, **fields: object) -> Question:
    return action("hello", options, ASKED, **fields)


def test_every_candidate_has_a_confidence_and_they_add_up_to_one() -> None:
    chosen = choice("Sure, we can begin now.", GO, END, asked=ASKED)
    assert chosen.exit == "go" and set(chosen.confidence) == {"go", "END", STAY}
    assert sum(chosen.confidence.values()) == pytest.approx(1, abs=0.01)
    assert chosen.reason.kind == "confident" and chosen.reason.fact("best") == "go"


def test_a_clarifying_question_or_a_hedge_stays() -> None:
    assert choice("What do you mean by ready?", GO, END, asked=ASKED).exit == STAY
    assert choice("maybe", GO, END, asked=ASKED).exit == STAY
    assert choice("Hello Ava, good morning to you.", GO, END, asked=ASKED).exit == STAY


def test_a_message_that_entered_the_state_stays() -> None:
    chosen = choice("Yes, I'm ready.", GO, END, asked=ASKED, entered_this_turn=True)
    assert (chosen.exit, chosen.reason.kind) == (STAY, "entered")


def test_a_close_call_asks_naming_both_candidates() -> None:
    verdict = decide(_question(DATE, RESEND), {"date": 0.45, "resend": 0.4, STAY: 0.15}, CAL)
    assert (verdict.exit, verdict.kind, verdict.candidates) == (
        CLARIFY,
        "unsure",
        ("date", "resend"),
    )
    clear = decide(_question(DATE, RESEND), {"date": 0.8, "resend": 0.1, STAY: 0.1}, CAL)
    assert (clear.exit, clear.kind) == ("date", "confident")


def test_an_irreversible_exit_needs_more_than_a_reversible_one() -> None:
    end = replace(END, irreversible=True)
    confidence = {"END": 0.7, "go": 0.1, STAY: 0.2}
    assert decide(_question(end, GO), confidence, CAL).exit == CLARIFY
    assert decide(_question(replace(END), GO), confidence, CAL).exit == "END"
    # Where asking is off, an irreversible exit below its bar stays; a reversible one is taken.
    off = _question(end, GO, may_clarify=False)
    assert decide(off, confidence, CAL).exit == STAY
    assert decide(off, {"END": 0.95, "go": 0.0, STAY: 0.05}, CAL).exit == "END"


def test_a_confirm_exit_is_always_asked_about_first() -> None:
    confirm = replace(END, confirm=True)
    verdict = decide(_question(confirm, GO), {"END": 0.99, "go": 0.0, STAY: 0.01}, CAL)
    assert (verdict.exit, verdict.kind, verdict.candidates) == (CLARIFY, "confirm", ("END",))


def test_never_asks_where_the_designer_turned_it_off_or_where_it_just_asked() -> None:
    close = {"date": 0.45, "resend": 0.4, STAY: 0.15}
    assert decide(_question(DATE, RESEND, may_clarify=False), close, CAL).exit == "date"
    again = _question(DATE, RESEND, clarifying=("date", "resend"))
    assert decide(again, close, CAL).exit == "date"


def test_staying_by_a_hair_asks_about_the_exit() -> None:
    verdict = decide(_question(DATE, RESEND), {STAY: 0.45, "date": 0.4, "resend": 0.15}, CAL)
    assert (verdict.exit, verdict.candidates) == (CLARIFY, ("date",))


def test_the_question_names_the_candidates_from_their_descriptions() -> None:
    assert clarifying_question((DATE, RESEND)) == (
        "Do you want to change the date of the booking, or have the tickets sent again?"
    )


@pytest.mark.parametrize(
    ("message", "expected"),
    [("the first one", "date"), ("the second", "resend"), ("the latter please", "resend")],
)
def test_an_answer_by_place_picks_among_the_candidates(message: str, expected: str) -> None:
    asked = action(message, (DATE, RESEND), ASKED, clarifying=("date", "resend"))
    verdict = answer(asked, {"date": 0.1, "resend": 0.1, STAY: 0.8}, CAL)
    assert verdict is not None and (verdict.exit, verdict.kind) == (expected, "answer_ordinal")


def test_a_yes_or_a_no_answers_a_question_about_one_exit() -> None:
    yes = action("yes please", (DATE, RESEND), ASKED, clarifying=("date",))
    no = action("no, not that", (DATE, RESEND), ASKED, clarifying=("date",))
    confidence = {"date": 0.3, "resend": 0.3, STAY: 0.4}
    assert getattr(answer(yes, confidence, CAL), "exit", None) == "date"
    assert getattr(answer(no, confidence, CAL), "exit", None) == STAY


def test_an_answer_naming_a_candidate_is_judged_among_the_candidates_first() -> None:
    said = "the date, I need it moved to friday"
    chosen = choice(said, DATE, RESEND, asked="Ask what they need.", clarifying=("date", "resend"))
    assert chosen.exit == "date"


def test_the_chooser_asks_in_words_naming_what_it_asks_about() -> None:
    confirm = replace(END, confirm=True)
    chosen = choice("Stop, I want to quit.", GO, confirm, asked=ASKED)
    assert chosen.exit == CLARIFY and chosen.candidates == ("END",)
    assert chosen.question == "Do you want to stop?"


def test_every_reason_agrees_with_its_choice_on_the_labelled_sets() -> None:
    checked = 0
    for case in load_cases(LABELS) + load_cases(DEV)[:150]:
        question = question_for(case)
        chosen = chooser().choose(question)
        reason = chosen.reason
        if chosen.exit == CLARIFY:
            assert chosen.candidates and chosen.candidates[0] in chosen.confidence
            assert reason.fact("candidates") == chosen.candidates and chosen.question
        elif reason.kind in ("confident", "unsure", "only_choice"):
            assert reason.fact("best") == chosen.exit
            assert reason.fact("confidence") == chosen.confidence[chosen.exit]
            if reason.kind == "confident":
                assert reason.fact("confidence") >= reason.fact("bar")
            checked += 1
        elif reason.kind == "stay":
            assert chosen.exit == STAY and reason.fact("best") == STAY
        assert str(reason)  # rendered once, for people
    assert checked > 50


def test_a_decision_weighs_the_sessions_findings_first() -> None:
    options = (
        ExitOption("ok", "No red-flag symptoms were reported.", "ok", ("No chest pain.",)),
        ExitOption("stop", "Chest pain was reported.", "stop", ("I had chest pain.",)),
    )
    base = Question(kind="decision", state="d", options=options, user_messages=("No chest pain.",))
    flagged = replace(base, annotations=("chest_pain",))
    assert chooser().choose(flagged).exit == "stop"
    assert chooser().choose(flagged).reason.fact("source") == "the session's findings"
    assert chooser().choose(base).exit == "ok"


def test_an_invalid_value_asked_for_is_refused_and_asked_again() -> None:
    party = {"party": {"type": ["integer", "null"], "minimum": 1, "maximum": 12}}
    table = ExitOption("book", "The guest gives the party size.", "book", ("a table for 4",))
    asked = "Ask how many people are coming."
    fine = choice("a table for 4", table, asked=asked, slots=party, collect=("party",))
    assert fine.slots == {"party": 4} and not fine.slot_problems
    # The chooser reports what it read; the runtime refuses it and asks once more.
    question = action("a table for 40", (table,), asked, slots=party, collect=("party",))
    decided = drive(runtime_decide(chooser(), question))
    wrong = decided.value
    assert wrong is not None
    assert (wrong.exit, wrong.reason.kind, wrong.slots) == (STAY, "invalid_slot", {})
    assert "12" in decided.failures[0].data["error"]
    # What was refused is said first; the state's own words follow once the runtime has
    # rendered them with the message's other values in (`handlers.action`).
    assert wrong.preface.startswith("Party: 40 is above the maximum 12") and wrong.reply == ""


def test_what_is_remembered_is_the_users_own_statement() -> None:
    remembered = chooser().remember(("I always walk my dog after lunch.",))
    assert remembered == [("personal", "I always walk my dog after lunch.")]
    assert chooser().remember(("What is nitroglycerin?",)) == []


pytestmark = pytest.mark.slow  # the real embedding model


def test_a_decisions_confidence_reads_as_a_confidence() -> None:
    """`/why` shows the chosen exit's confidence: the deciding evidence's probabilities (the
    chosen one highest), not its lead over the next exit beside rivals shown at 0."""
    options = (
        ExitOption("ok", "No red-flag symptoms were reported.", "ok"),
        ExitOption("stop", "Chest pain was reported.", "stop"),
    )
    question = Question(kind="decision", state="d", options=options, user_messages=("fine",))
    chosen = decide_silently(question, lambda asked: {"ok": 0.58, "stop": 0.42}, 0.1)
    assert chosen.exit == "ok" and dict(chosen.confidence) == {"ok": 0.58, "stop": 0.42}
    assert chosen.reason.fact("lead") == pytest.approx(0.16)


def test_a_step_with_one_way_out_shows_no_confidence() -> None:
    """A reflection's only exit, like a recall's, is no choice: no confidence is shown."""
    only = (ExitOption("next", "continue", "next"),)
    question = Question(kind="reflection", state="r", options=only, user_messages=("hi",))
    chosen = chooser().choose(question)
    assert (chosen.exit, dict(chosen.confidence)) == ("next", {})
