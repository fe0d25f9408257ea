"""The clarifying question speaks to the user, whatever the descriptions' shape."""

from __future__ import annotations

import pytest

from cgraph.backends.offline.asking import clarifying_question
from cgraph.runtime.ports import ExitOption


def _asked(*descriptions: str) -> str:
    return clarifying_question([ExitOption(str(i), d, "x") for i, d in enumerate(descriptions)])


@pytest.mark.parametrize(
    ("descriptions", "question"),
    [
        (
            ("The user explicitly asks to end the session now.",),
            "Do you want to end the session now?",
        ),
        (("The user asks for a refund.",), "Do you want a refund?"),
        (
            ("The guest wants to cancel their booking.", "The guest wants to change the time."),
            "Do you want to cancel your booking, or change the time?",
        ),
        (
            ("The patient reports chest pain or pressure.",),
            "Just to check: do you mean chest pain or pressure?",
        ),
        (
            ("The user is done and says goodbye.",),
            "Just to check: you are done and say goodbye, is that right?",
        ),
        (
            (
                "The user wants to stop.",
                "An emergency happening right now, such as crushing chest pain or fainting.",
            ),
            "Just to check, do you mean that you want to stop, or an emergency happening right"
            " now?",
        ),
    ],
)
def test_descriptions_are_asked_in_the_second_person(
    descriptions: tuple[str, ...], question: str
) -> None:
    assert _asked(*descriptions) == question


def test_nouns_after_and_keep_their_plural() -> None:
    assert _asked("The user wants to change dates and times.") == (
        "Do you want to change dates and times?"
    )
