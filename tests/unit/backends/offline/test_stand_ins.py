"""Descriptions rewritten as what the user would say."""

from __future__ import annotations

from cgraph.backends.offline.options import alternatives, first_person, stand_ins


def test_the_narrator_is_dropped_and_the_alternatives_split() -> None:
    assert stand_ins("The customer says the food is late or never arrived.") == (
        "the food is late or never arrived",
        "the food is late",
        "never arrived",
    )


def test_any_role_is_a_narrator() -> None:
    assert alternatives("The tenant reports a water leak or a burst pipe.") == [
        "a water leak",
        "a burst pipe",
    ]


def test_a_verb_in_the_third_person_gets_an_i() -> None:
    assert first_person("declines both options") == "I decline both options"
    assert first_person("is done") == "I am done"
    assert first_person("does not have their booking reference") == (
        "I do not have my booking reference"
    )
    assert first_person("the food is late") == "the food is late"
