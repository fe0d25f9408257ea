"""Which part of a message the chooser matches: after a contrast, the first of two requests."""

from __future__ import annotations

import pytest

from cgraph.backends.offline.reading import contrast_focus, first_request, focus, message_texts
from cgraph.runtime.ports import ExitOption
from tests.unit.backends.offline._chooser import chosen


@pytest.mark.parametrize(
    ("message", "point"),
    [
        ("it's not dirty, it's just that the heating doesn't work", "it's just that the heating"),
        ("I don't want to quit, I just need a break", "I just need a break"),
        ("no injuries, but I do have high blood pressure", "I do have high blood pressure"),
        # No denial before it: "but" is no contrast with something denied.
        ("food yes, but I haven't seen him drink", "food yes, but I haven't seen him drink"),
        # Too little after it to stand for the message.
        ("not that one, just no", "not that one, just no"),
    ],
)
def test_the_point_after_a_contrast_with_a_denial(message: str, point: str) -> None:
    assert contrast_focus(message).startswith(point)


def test_the_first_of_two_requests_is_matched() -> None:
    assert first_request("I want to sign up and also book a yoga class") == "I want to sign up"
    assert first_request("the TV doesn't work and I'd also like some food") == (
        "the TV doesn't work"
    )
    assert first_request("great, also the light is out") == "great, also the light is out"
    assert focus("not spin, the HIIT one on Tuesday") == "the HIIT one on Tuesday"


def _choose(message: str, *options: ExitOption) -> str:
    return chosen(message, *options, asked="Ask whether they have injuries or medical conditions.")


def test_what_follows_but_decides_not_what_was_denied() -> None:
    has = ExitOption(
        "note", "The member has an injury or medical condition.", "note", ("I have asthma.",)
    )
    hasnt = ExitOption(
        "fit", "The member has no injury or medical condition.", "fit", ("Nothing like that.",)
    )
    assert _choose("no injuries, but I do have high blood pressure", has, hasnt) == "note"
    assert _choose("no injuries, I'm fit", has, hasnt) == "fit"


def test_the_texts_read_from_a_message_are_embedded_together() -> None:
    said = "no injuries, but I do have high blood pressure and I want to cancel"
    texts = message_texts(said)
    assert texts[:2] == [said, "I do have high blood pressure and I want to cancel"]
    assert "want to cancel" not in texts  # nothing denied after the contrast
    assert "I want to cancel" in texts  # a clause, for the exits a clause may take


@pytest.mark.parametrize(
    ("message", "point"),
    [
        ("not basic, full please", "full please"),
        ("it's not a Friday, it's Thursday the 4th", "it's Thursday the 4th"),
        ("it wasn't a double charge, the amount was wrong", "the amount was wrong"),
        ("the noise isn't the problem, the toilet won't flush", "the toilet won't flush"),
        # Saying why, not what instead.
        (
            "the accident wasn't my fault, the other driver admitted it",
            "the accident wasn't my fault, the other driver admitted it",
        ),
        # A limit, a plain no, a contrast too short to stand alone, a second denial.
        ("not before 4, if possible", "not before 4, if possible"),
        ("not right now, thanks", "not right now, thanks"),
        ("it's not dangerous, just annoying", "it's not dangerous, just annoying"),
        ("not points, no accidents either", "not points, no accidents either"),
    ],
)
def test_a_correction_means_what_follows_it(message: str, point: str) -> None:
    assert contrast_focus(message) == point


def test_a_corrected_choice_takes_the_exit_it_names_instead() -> None:
    order = ExitOption("order", "The guest orders something from the menu.", "order")
    leave = ExitOption("none", "The guest changes their mind and does not want to order.", "x")
    asked = "Take the guest's room service order."
    assert chosen("not the pasta, the chicken salad", order, leave, asked=asked) == "order"


pytestmark = pytest.mark.slow  # the real embedding model
