"""Negations of another word: a limit stated ("I can't have gluten") is not a denial."""

from __future__ import annotations

import pytest

from cgraph.backends.offline.reading import denied_phrases, polarity, states_limit, without_limits
from cgraph.runtime.ports import ExitOption
from tests.unit.backends.offline._chooser import chosen


@pytest.mark.parametrize(
    "message",
    ["I can't have gluten", "I don't eat pork", "I can't exercise after my surgery", "can't sleep"],
)
def test_a_limit_is_an_affirmed_statement(message: str) -> None:
    assert states_limit(message)
    assert denied_phrases(message) == [] and polarity(message) == 0


@pytest.mark.parametrize(
    "message",
    [
        "I don't have any allergies",  # not having is a denial
        "I can't get to a drop-off point",  # the option itself, denied
        "the toilet won't flush",  # a fault: exits describe it as "not working" too
        "no, I don't want that",
    ],
)
def test_other_negations_still_deny(message: str) -> None:
    assert not states_limit(message) and without_limits(message) == message
    assert polarity(message) == -1


def test_a_diet_stated_with_a_negator_takes_the_exit_that_records_one() -> None:
    diet = ExitOption("note", "The guest has a food allergy or a dietary requirement.", "note")
    none = ExitOption("order", "The guest has no allergies or dietary requirements.", "order")
    asked = "Ask whether anyone has food allergies or dietary requirements."
    assert chosen("I don't eat pork", diet, none, asked=asked) == "note"
    assert chosen("no allergies at all", diet, none, asked=asked) == "order"


pytestmark = pytest.mark.slow  # the real embedding model
