"""Shared words between a message and an exit's texts, the denied ones left out."""

from __future__ import annotations

from cgraph.backends.offline.reading import denied_phrases
from cgraph.backends.offline.words import overlaps, said, stem, stems


def test_a_words_inflections_share_a_stem() -> None:
    assert stem("heating") == stem("heat") == stem("heated")
    assert stem("arrives") == stem("arrived") == stem("arrive")
    assert stem("deliveries") == stem("delivery")


def test_function_and_narrator_words_are_not_content() -> None:
    assert stems("The customer says that it is the oven") == {"oven"}


def test_a_denied_word_is_not_said() -> None:
    assert said("no gas smell, no sparks, the oven is broken", denied_phrases) == {"oven", "broken"}


def test_a_word_every_exit_uses_counts_less_than_a_rare_one() -> None:
    texts = {"a": ["order arrive"], "b": ["order refund"]}
    message = "my order hasn't come, when will it arrive"
    shares = overlaps(said(message, denied_phrases), texts)
    assert shares["a"] > shares["b"] > 0
    assert overlaps(said("hello", denied_phrases), texts) == {"a": 0.0, "b": 0.0}
