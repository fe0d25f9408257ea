"""`when:` conditions are parsed, never run: what lint learns from the syntax tree alone."""

from __future__ import annotations

import pytest

from cgraph.spec.conditions import parse


def test_a_condition_reads_its_names() -> None:
    assert parse("party_size > 12 and not vip") == (None, frozenset({"party_size", "vip"}))


def test_a_lone_name_is_a_name_it_reads() -> None:
    """`when: has_allergies` is the commonest condition; a typo in it must not pass lint."""
    assert parse("has_alergies") == (None, frozenset({"has_alergies"}))
    assert parse("range") == (None, frozenset())  # a built-in is no variable


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("party_size >", "unexpected 'end of template'"),
        ("'a' | nosuchfilter", "no filter named 'nosuchfilter'"),
        ("x is nosuchtest", "no test named 'nosuchtest'"),
        ("x | map('nosuchfilter') | list and x | nosuch2", "no filter named 'nosuch2'"),
        ("1" * 5000 + " > x", "4,300 digits"),
    ],
)
def test_what_would_fail_when_run_is_a_syntax_problem(source: str, problem: str) -> None:
    error, names = parse(source)
    assert error is not None and problem in error
    assert names == frozenset()
