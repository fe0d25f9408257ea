"""Negation and hedges read from the words, where sentence embeddings cannot see them."""

from __future__ import annotations

from cgraph.backends.offline.reading import (
    affirmed,
    denied_phrases,
    is_hedge,
    is_negated,
    point,
)


def test_the_words_after_a_negator_are_denied_clause_by_clause() -> None:
    assert denied_phrases("No side effects, I feel fine") == ["side effects"]
    assert denied_phrases("I didnt miss any doses but I was late once") == ["miss any doses"]
    assert denied_phrases("no tightness, no pressure") == ["tightness", "pressure"]


def test_a_bare_no_denies_no_topic() -> None:
    assert denied_phrases("No.") == []
    assert denied_phrases("Not really, no") == []


def test_words_ending_in_nt_are_not_negators() -> None:
    assert not is_negated("The patient wants an appointment")
    assert is_negated("I dont want one") and is_negated("It isn't working")


def test_affirmed_drops_the_negators() -> None:
    assert affirmed("No chest pain was reported") == "chest pain was reported"


def test_hedges_are_unsure_answers() -> None:
    assert is_hedge("maybe once? I can't remember")
    assert is_hedge("idk honestly")
    assert not is_hedge("No, I took them all")


def test_hedges_include_stalling_and_not_remembering() -> None:
    assert is_hedge("one sec, checking my inbox")
    assert is_hedge("I think so? we might be moving soon")
    assert is_hedge("I don't remember the date exactly")
    assert not is_hedge("no, nothing, I was just checking. bye")


def test_no_problem_denies_nothing() -> None:
    assert denied_phrases("no problem, please send the request") == []
    assert denied_phrases("no problem with the pills, no side effects") == ["side effects"]


def test_the_point_of_a_message_is_what_it_says_past_its_denials() -> None:
    assert point("not a leak, it's the oven, it won't heat up") == "it's the oven, it won't heat up"
    assert (
        point("nothing is broken, I wanted to ask about my lease")
        == "I wanted to ask about my lease"
    )
    assert point("no, she is not eating at all") == "no, she is not eating at all"
    assert point("no tightness, no pressure") == "no tightness, no pressure"
    assert point("no problem, send it to my house") == "no problem, send it to my house"


def test_needing_to_look_something_up_first_is_a_hedge() -> None:
    assert is_hedge("hmm, I'd need to look at my calendar")
    assert is_hedge("I'll have to ask my wife")
    assert not is_hedge("I need to change my flight")
