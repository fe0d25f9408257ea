"""Messages that sound like a global exit and are not one: "I feel fine today" lies near "I
just fainted and I feel terrible" in an embedding, and at the check-in's greeting it took the
`emergency` exit (the first message a new user of `make demo` may type).

The cases are the development set `bench/data/dev6_labels.yaml` (fitted on), asked as a
session asks them: with the graph's global exits. Two of the 36 still take one ("I finally feel
like I want to live a healthier life" → crisis support; "a follow-up after my chest pain last
month, it's gone now" → emergency: nothing in the features reads that a thing is over), where
five did before the scorer weighed a plain well-being; the set's counts stay where the shipped
weights put them (frozen like `test_labelled_figures`)."""

from __future__ import annotations

from functools import cache

import pytest

from cgraph.testing.labelled import Case, question_for
from cgraph.testing.labelled_eval import Outcome, figures, run_chooser
from tests.support.labelled_sets import DEV6, load_cases
from tests.unit.backends.offline._chooser import chooser

pytestmark = pytest.mark.slow

# (right, wrong, clarify) with the shipped weights, global exits offered.
FROZEN = (30, 5, 1)
GLOBAL_TAKEN = 2


@cache
def _outcomes() -> tuple[Outcome, ...]:
    return tuple(run_chooser(chooser(), load_cases(DEV6, global_exits=True)))


def _global_ids(case: Case) -> set[str]:
    return {o.id for o in question_for(case).options if o.anywhere}


def test_messages_that_only_sound_like_an_emergency_take_no_more_global_exits() -> None:
    taken = [
        (o.case.state, o.case.message, o.chosen)
        for o in _outcomes()
        if o.chosen in _global_ids(o.case)
    ]
    assert len(taken) <= GLOBAL_TAKEN, taken


def test_the_set_stays_where_it_was_frozen() -> None:
    found = figures(_outcomes())
    right, wrong, clarify = FROZEN
    assert found.turns == right + wrong + clarify
    assert abs(found.right - right) <= 1 and abs(found.wrong - wrong) <= 1, found.line()


def test_the_demo_greeting_answered_with_a_well_being_stays() -> None:
    (greeting,) = [
        o
        for o in _outcomes()
        if o.case.state == "welcome_patient" and o.case.message == "I feel fine today"
    ]
    assert greeting.chosen == "stay"
