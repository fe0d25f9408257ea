"""Shared dialogue acts lent to the exits whose descriptions mean them."""

from __future__ import annotations

from dataclasses import replace

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import ExitOption, Question
from tests.unit.backends.llm._chooser import answer_of


def _option(exit_id: str, description: str) -> ExitOption:
    return ExitOption(exit_id, description, exit_id)


HANDOFF = _option("handoff", "The customer asks to speak to a person, a human agent or a manager.")
CRISIS = _option("crisis", "The user says they might harm themselves or are in danger.")
DONE = _option("END", "The customer is done.")


def test_asking_for_a_person_and_a_crisis_are_lent_their_utterances() -> None:
    lent = SemanticModel(embedder=shared_embedder()).act_examples((HANDOFF, CRISIS, DONE))
    assert "Put me through to someone, please." in lent["handoff"]
    assert "I feel like a burden to everyone." in lent["crisis"]
    assert "Put me through to someone, please." not in lent.get("END", ())


def test_a_global_hand_off_without_examples_hears_a_request_for_a_person() -> None:
    order = _option("order", "The customer wants to return something they bought.")
    request = Question(
        kind="action",
        state="welcome",
        options=(replace(HANDOFF, anywhere=True), order, DONE),
        allow_stay=True,
        user_messages=("could you put me through to a real human",),
    )
    answer = answer_of(SemanticModel(embedder=shared_embedder()), request)
    assert answer["exit"] == "handoff"


def test_keeping_things_unchanged_is_lent_to_the_exit_that_keeps_them_only() -> None:
    keep = _option("keep", "The customer decides to keep the original flight after all.")
    book = _option("book", "The owner changes their mind and wants to book after all.")
    moves = _option("moves", "The user moves on to something else or is done with research.")
    lent = SemanticModel(embedder=shared_embedder()).act_examples((keep, book, moves))
    assert "Don't change anything." in lent["keep"]
    assert "Don't change anything." not in (*lent.get("book", ()), *lent.get("moves", ()))
