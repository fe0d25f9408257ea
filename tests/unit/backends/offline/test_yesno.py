"""Which exits mean "no", and whether a message opens with a yes or a no."""

from __future__ import annotations

import pytest

from cgraph.backends.offline.options import (
    alternative_signs,
    means_no,
    negative_head,
    sign_for,
)
from cgraph.backends.offline.reading import leading_answer
from cgraph.runtime.ports import ExitOption
from tests.unit.backends.offline._chooser import chosen

COME = ExitOption("now", "The guest agrees to an engineer coming now.", "now")
LATER = ExitOption(
    "later", "The guest does not want anyone to come in now or will be out.", "later"
)


def test_an_exit_means_no_by_the_head_of_its_description() -> None:
    assert negative_head(LATER.description)
    assert negative_head("The visitor declines the personal training sessions.")
    assert not negative_head("The room is dirty or was not cleaned.")
    assert not negative_head(COME.description)


def test_an_exit_means_no_by_its_examples_when_its_description_names_the_content() -> None:
    clean = ExitOption(
        "ok", "The driver has a clean record.", "ok", ("No, clean licence.", "Nothing.")
    )
    points = ExitOption("review", "The driver has penalty points.", "x", ("I have six points.",))
    assert means_no(clean) and not means_no(points)
    assert not means_no(ExitOption("ok", "The driver has a clean record.", "ok"))
    assert leading_answer("not that I can remember") == -1


def test_a_verbless_alternative_inherits_the_negation_before_it() -> None:
    assert alternative_signs("The guest has no allergies or dietary requirements.") == [
        ("has no allergies", -1),
        ("dietary requirements", -1),
    ]
    assert alternative_signs("The room is dirty or was not cleaned.") == [
        ("is dirty", 1),
        ("was not cleaned", -1),
    ]
    assert [s for _, s in alternative_signs(LATER.description)] == [-1, 1]


@pytest.mark.parametrize(
    ("message", "answer"),
    [
        ("yes, come now", 1),
        ("sure, no problem, I'm in", 1),
        ("I don't mind, send them up", 1),
        ("no, I'm about to go out", -1),
        ("not now, my kids are asleep", -1),
        ("no thanks, I've been lifting for years", -1),
        ("nothing like that", -1),
        ("not that I know of", -1),
        ("not that I can remember", -1),
        ("don't think so", -1),
        ("I can't think of anything", -1),
        # A correction: the last answer given is the answer.
        ("no, well actually yes, I used it once on Tuesday", 1),
        # A denied topic and then something else is no answer to the question.
        ("nothing's wrong with him, he just needs his booster", 0),
        ("no injuries, but I have high blood pressure", 0),
        ("the heating doesn't work", 0),
    ],
)
def test_a_message_opens_with_a_yes_or_a_no(message: str, answer: int) -> None:
    assert leading_answer(message) == answer


def _choose(message: str, *options: ExitOption) -> str:
    return chosen(message, *options, asked="Ask whether an engineer may come into the room now.")


def test_a_yes_takes_the_exit_that_says_yes_whatever_words_it_shares() -> None:
    # "come now" shares its words with "does not want anyone to come in now".
    assert _choose("yes, come now", COME, LATER) == "now"
    assert _choose("not now, my kids are asleep", COME, LATER) == "later"


@pytest.mark.xfail(
    strict=True,
    reason="a known miss of the fitted scorer: 'coming by train' lies next to 'coming by "
    "car', and the leading 'no' does not outweigh it for an exit without examples",
)
def test_a_no_before_a_near_topic_takes_the_exit_that_says_no() -> None:
    car = ExitOption("car", "The guest is coming by car and needs a parking space.", "car")
    none = ExitOption("none", "The guest does not need parking.", "none")
    assert _choose("no, we're coming by train", car, none) == "none"


def test_a_denied_phrase_takes_the_sign_of_the_alternative_it_names() -> None:
    dirty = "The room is dirty or was not cleaned."
    assert sign_for("dirty at all", dirty) == 1
    assert sign_for("has cleaned it", dirty) == -1
    assert sign_for("noisy", dirty) == 1  # no shared word: the head's sign
    assert sign_for("noisy", LATER.description) == -1


pytestmark = pytest.mark.slow  # the real embedding model
