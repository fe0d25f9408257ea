"""Asking instead of guessing: a clarifying turn stays, names what it asked about, and
the next message is judged against it; designers word it, confirm exits or turn it off."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, simple, stay, write

EXITS = {
    "date": "The customer wants to change the date.",
    "resend": "The customer wants the tickets sent again.",
}
BODY = (
    action("help", EXITS)
    + action("date", {"END": "The customer is done."})
    + action("resend", {"END": "The customer is done."})
)


def ask(question: str, *scores: tuple[str, float]) -> dict[str, object]:
    return {"exit": "clarify", "reason": "two exits fit", "reply": question, "scores": dict(scores)}


def _session(
    tmp_path: Path, script: dict[str, object], top: str = "", extra: str = ""
) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel(script)
    path = write(tmp_path, simple(start="help", body=BODY + extra, top=top))
    return Session.start(path, model=model, store=tmp_path / "store"), model


def test_a_model_may_ask_and_the_answer_is_judged_against_what_it_asked(tmp_path: Path) -> None:
    question = "Do you want to change the date, or have the tickets sent again?"
    asked = ask(question, ("date", 0.5), ("resend", 0.4), ("END", 0.1))
    session, model = _session(tmp_path, {"help": [asked, go("date")], "date": [stay("New date?")]})
    first = session.send("the tickets")
    assert (first.reply, first.state, first.clarified) == (question, "help", True)
    assert first.decisions[-1].chosen == "clarify" and first.as_json()["clarified"] is True
    assert "clarify" in model.exit_enum("help")
    second = session.send("the date")
    assert (second.state, second.clarified) == ("date", False)
    prompt = model.requests_for("help")[1].messages[0]["content"]
    assert "Your last reply asked which of these the user meant: `date`, `resend`" in prompt
    # Asked once: the answer's own question may not ask again.
    assert "clarify" not in model.requests_for("help")[1].schema["properties"]["exit"]["enum"]


def test_the_question_asked_survives_a_resume(tmp_path: Path) -> None:
    asked = ask("Which one?", ("date", 0.5), ("resend", 0.45))
    session, _ = _session(tmp_path, {"help": [asked, go("resend")], "resend": [stay("Sent.")]})
    session.send("the tickets")
    model = ScriptedModel({"help": [go("resend")], "resend": [stay("Sent.")]})
    again = Session.resume(session.id, store=tmp_path / "store", model=model)
    assert again.send("send them again").state == "resend"
    assert "Your last reply asked" in model.requests_for("help")[0].messages[0]["content"]


def test_a_clarifying_answer_needs_its_question(tmp_path: Path) -> None:
    empty = {"exit": "clarify", "reason": "unsure", "reply": ""}
    session, _ = _session(tmp_path, {"help": [empty, stay("How can I help?")]})
    turn = session.send("hmm")
    assert (turn.reply, turn.clarified) == ("How can I help?", False)
    assert any("the reply is your question" in w for w in turn.warnings)


def test_the_designer_words_the_question(tmp_path: Path) -> None:
    top = "clarify: \"Sorry, which: {{ candidates | join(' or ') }}?\"\n"
    asked = ask("Model words", ("date", 0.6), ("resend", 0.3))
    session, _ = _session(tmp_path, {"help": [asked]}, top=top)
    turn = session.send("the tickets")
    assert turn.reply == (
        "Sorry, which: The customer wants to change the date. or "
        "The customer wants the tickets sent again.?"
    )


def test_a_graph_that_turns_asking_off_offers_no_clarify(tmp_path: Path) -> None:
    session, model = _session(tmp_path, {"help": [stay("How can I help?")]}, top="clarify: false\n")
    session.send("the tickets")
    assert "clarify" not in model.exit_enum("help")


@pytest.mark.parametrize("answer", ["yes", "no"])
def test_an_exit_to_confirm_is_asked_about_first(tmp_path: Path, answer: str) -> None:
    body = action("help", {"END": "The customer wants to cancel the order."}).replace(
        "next_state: END", "next_state: END\n        confirm: true"
    )
    path = write(tmp_path, simple(start="help", body=body))
    taken = go("END", reply="Cancelled.") if answer == "yes" else stay("Anything else?")
    model = ScriptedModel({"help": [go("END", reply="Cancelled."), taken]})
    session = Session.start(path, model=model)
    first = session.send("cancel it")
    assert first.clarified and not first.completed
    assert (
        first.reply
        == "Before I go on, can you confirm this: the customer wants to cancel the order?"
    )
    assert "[confirm first" in model.requests_for("help")[0].messages[0]["content"]
    second = session.send(answer)
    assert second.completed is (answer == "yes")


def test_the_turn_object_gives_each_choices_confidence_and_whether_it_asked(
    tmp_path: Path,
) -> None:
    asked = ask("Which one?", ("date", 0.5), ("resend", 0.4), ("END", 0.1))
    took = {**go("date"), "scores": {"date": 0.875, "resend": 0.125}}
    session, _ = _session(tmp_path, {"help": [asked, took], "date": [stay("New date?")]})
    first = session.send("the tickets").as_json()
    assert first["clarified"] is True
    assert first["choices"][-1] == {"state": "help", "chosen": "clarify", "confidence": None}
    second = session.send("the date").as_json()
    assert second["clarified"] is False
    assert {"state": "help", "chosen": "date", "confidence": 0.875} in second["choices"]


COUNTED = """\
cgraph: 1
name: counted
start: help
clarify: "Sorry, question {{ clarifications + 1 }}: {{ candidates | join(' or ') }}?"
states:
  help:
    type: action
    objective: Learn what the customer wants.
    actions: [Ask what they want.]
    intra_state_navigation_guidelines: [Move on once it is clear.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    exit_conditions:
      - description: The customer wants to change the date.
        next_state: END
      - description: The customer wants the tickets sent again.
        next_state: END
      - when: clarifications >= 2
        next_state: person
  person:
    type: annotation
    objective: Hand over to a person.
    say: Let me get a colleague.
    next_state: END
"""


def _counted(tmp_path: Path, *answers: dict[str, object]) -> Session:
    return Session.start(write(tmp_path, COUNTED), model=ScriptedModel({"help": list(answers)}))


ASKED = ask("Which one?", ("END", 0.5), ("END_2", 0.4))
UNSURE = stay("Could you say more?")


def test_clarifications_count_the_questions_asked_so_a_rule_hands_off_after_two(
    tmp_path: Path,
) -> None:
    session = _counted(tmp_path, ASKED, UNSURE, ASKED, UNSURE, ASKED)
    turns = [session.send(m) for m in ("tickets", "hm", "tickets", "hm")]
    assert [t.clarified for t in turns] == [True, False, True, False]
    assert turns[0].reply.startswith("Sorry, question 1: ")
    assert turns[2].reply.startswith("Sorry, question 2: ")
    assert [t.state for t in turns] == ["help"] * 4  # two asked: the rule waits to be asked
    third = session.send("tickets")  # a third question would be asked: the rule holds
    assert third.path == ("help", "person") and third.reply == "Let me get a colleague."
    assert any("instead of asking again" in d.reason for d in third.decisions)


def test_the_answer_to_the_last_question_allowed_is_still_taken(tmp_path: Path) -> None:
    session = _counted(tmp_path, ASKED, UNSURE, ASKED, go("END_2"))
    for message in ("tickets", "hm", "tickets"):
        session.send(message)
    answered = session.send("send them again")  # two asked: an answer, not a hand-off
    assert [t.exit_id for t in answered.transitions] == ["END_2"] and answered.completed
