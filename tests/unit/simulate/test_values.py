from __future__ import annotations

import re

import pytest

from cgraph.simulate.values import from_pattern, made_up
from cgraph.spec.model import Slot


@pytest.mark.parametrize(
    "pattern",
    [
        r"^@[A-Za-z0-9_]{2,30}$",
        r"^[A-Z][a-z]+ [A-Z][a-z]+$",
        r"^\d{3}-\d{4}$",
        r"^(yes|no)$",
        r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$",
        r"^[A-Z]{2}[0-9]{4}$",
        r"^(?:\+44|0)7\d{9}$",
    ],
)
def test_a_value_made_from_a_pattern_matches_it(pattern: str) -> None:
    made = from_pattern(pattern)
    assert made is not None and re.search(pattern, made), made


def test_a_pattern_too_clever_gives_no_value() -> None:
    assert from_pattern(r"^(a)\1$") is None


def test_values_follow_enum_type_and_bounds() -> None:
    assert made_up(Slot(type="string", enum=("red", "blue"))) == "red"
    assert made_up(Slot(type="integer", minimum=1000, maximum=9999)) == 1000
    assert made_up(Slot(type="integer", maximum=1)) == 1
    assert made_up(Slot(type="string", format="time")) == "19:00"
