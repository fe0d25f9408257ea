"""Shared words between a message and an exit's texts, the denied ones left out."""

from __future__ import annotations

from dataclasses import replace

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.calibration import Calibration
from cgraph.backends.llm.overlap import overlaps, said, stem, stems
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import ExitOption, Question
from tests.unit.backends.llm._chooser import answer_of


def test_a_words_inflections_share_a_stem() -> None:
    assert stem("heating") == stem("heat") == stem("heated")
    assert stem("arrives") == stem("arrived") == stem("arrive")
    assert stem("deliveries") == stem("delivery")


def test_function_and_narrator_words_are_not_content() -> None:
    assert stems("The customer says that it is the oven") == {"oven"}


def test_a_denied_word_is_not_said() -> None:
    assert said("no gas smell, no sparks, the oven is broken") == {"oven", "broken"}


def test_a_word_every_exit_uses_counts_less_than_a_rare_one() -> None:
    texts = {"a": ["order arrive"], "b": ["order refund"]}
    shares = overlaps("my order hasn't come, when will it arrive", texts)
    assert shares["a"] > shares["b"] > 0
    assert overlaps("hello", texts) == {"a": 0.0, "b": 0.0}


def _request(message: str, *options: ExitOption) -> Question:
    return Question(
        kind="action",
        state="welcome",
        options=options,
        allow_stay=True,
        user_messages=(message,),
    )


def test_shared_words_tell_two_near_exits_apart() -> None:
    # Both exits are about sending a photo; only one says "sent".
    sent = ExitOption("sent", "The customer has sent or will send a photo of the damage.", "a")
    none = ExitOption("none", "The customer cannot take or send a photo.", "b")
    request = _request("just sent you a picture", sent, none)
    embedder = shared_embedder()
    plain = SemanticModel(embedder=embedder, calibration=Calibration(overlap_weight=0.0))
    fused = SemanticModel(embedder=embedder)
    assert answer_of(plain, request)["exit"] == "none"
    assert answer_of(fused, request)["exit"] == "sent"
    # A clarifying question shares the state's words without answering it.
    asked = replace(request, user_messages=("what do you mean, sent where?",))
    assert answer_of(fused, asked)["exit"] == "stay"
