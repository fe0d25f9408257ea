"""Which exits end the conversation, and which messages sound like a close."""

from __future__ import annotations

import pytest

from cgraph.backends.offline.options import ends_conversation
from cgraph.backends.offline.reading import closes
from cgraph.runtime.ports import ExitOption

GO_ON = ExitOption("next", "The patient is ready to proceed with the check-in.", "next")
QUIT = ExitOption("quit", "The patient explicitly asks to end the session now.", "end_session")
BYE = ExitOption("END", "The tenant has nothing more to report.", "END")


@pytest.mark.parametrize(
    ("description", "target", "ends"),
    [
        ("The patient explicitly asks to end the session now.", "end_session", True),
        ("The user says goodbye right away.", "farewell", True),
        ("The user wants to stop for now.", "wrap_up", True),
        ("The tenant has nothing more to report.", "END", True),
        ("The member is done or says goodbye.", "END", True),
        # An exit to END described as an answer is matched like any other.
        ("The customer says the damage was there before the move.", "END", False),
        # Stopping or leaving something is not leaving the conversation.
        ("The user wants to stop or cancel the transfer.", "cancel", False),
        ("The guest leaves before noon.", "free_late", False),
        ("The patient is ready to proceed with the check-in.", "next", False),
    ],
)
def test_an_exit_ends_the_conversation_by_its_description_not_its_target(
    description: str, target: str, ends: bool
) -> None:
    assert ends_conversation(ExitOption("x", description, target)) is ends


@pytest.mark.parametrize(
    "message",
    ["cheers Maya", "nope, all good", "okay, fair enough", "no, that's it", "I'll be off, bye"],
)
def test_acknowledgements_thanks_and_farewells_close(message: str) -> None:
    assert closes(message)


@pytest.mark.parametrize(
    "message",
    [
        "I took all my pills, no side effects",
        "did you watch the match last night?",
        "great, also the bathroom light is out",
        "ok but what about my refund?",
        "I didn't sleep well again last night",
    ],
)
def test_a_message_that_says_or_asks_something_else_does_not_close(message: str) -> None:
    assert not closes(message)
