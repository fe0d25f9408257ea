"""Expectations against what a turn did: each key alone, and what a mismatch says."""

from __future__ import annotations

from typing import Any

import pytest

from cgraph.spec.testfile import Expect
from cgraph.testing.expectations import check
from cgraph.testing.observed import Observed


def seen(**changes: Any) -> Observed:
    values: dict[str, Any] = {
        "user": "My chest hurts.",
        "reply": "Any breathlessness?",
        "state": "check_shortness_of_breath",
        "path": ("check_chest_pain", "flag_chest_pain", "check_shortness_of_breath"),
        "exits": (
            ("check_chest_pain", "flag_chest_pain"),
            ("flag_chest_pain", "check_shortness_of_breath"),
        ),
        "variables": {
            "red_flags": ["chest pain"],
            "file": {"name": "a", "content": "x"},
            "meds": [{"medication": "lisinopril", "dosage": "10 mg"}, {"medication": "ibuprofen"}],
        },
        "annotations": ("chest_pain",),
        "recalled": ("Ann walks daily",),
        "stored": ("Ann takes a beta blocker",),
        "completed": False,
        "fallback": False,
        "guard": None,
        "decisions": (),
    }
    return Observed(**{**values, **changes})


HOLDING = [
    Expect(state="check_shortness_of_breath"),
    Expect(path=("check_chest_pain", "flag_chest_pain", "check_shortness_of_breath")),
    Expect(path_includes=("flag_chest_pain",), path_excludes=("end_session",)),
    Expect(exits=("check_chest_pain -> flag_chest_pain", "check_shortness_of_breath")),
    Expect(reply_contains=("breathless", "ANY"), reply_matches=r"\?$", reply_excludes="pain"),
    Expect(variables={"red_flags": ["chest pain"], "file": {"name": "a"}}),
    Expect(variables={"meds": [{"medication": "lisinopril"}, {"medication": "ibuprofen"}]}),
    Expect(variables={"receipt": None}),  # never set: unset
    Expect(annotations=("chest_pain",), recalled=("walks",), stored=("beta BLOCKER",)),
    Expect(completed=False, fallback=False, guard=False),
    Expect(interrupted=()),
]


@pytest.mark.parametrize("expect", HOLDING)
def test_expectations_that_hold_find_nothing(expect: Expect) -> None:
    assert check(expect, seen()) == []


BROKEN = [
    (Expect(state="end_session"), "state", "ended in `check_shortness_of_breath`"),
    (Expect(path=("check_chest_pain",)), "path", "the path differs"),
    (Expect(path_includes=("flag_breathlessness",)), "path_includes", "`flag_breathlessness`"),
    (Expect(path_excludes=("flag_chest_pain",)), "path_excludes", "went through"),
    (Expect(exits=("record_nitro_use", "check_chest_pain")), "exits", "differ"),
    (Expect(reply_contains="goodbye"), "reply_contains", "lacks 'goodbye'"),
    (Expect(reply_matches="^Bye"), "reply_matches", "/^Bye/"),
    (Expect(reply_excludes="breathless"), "reply_excludes", "contains 'breathless'"),
    (Expect(variables={"red_flags": []}), "variables", "`red_flags` is ['chest pain']"),
    (Expect(variables={"file": {"name": "b"}}), "variables", "`file`"),
    (Expect(variables={"meds": [{"medication": "lisinopril"}]}), "variables", "`meds`"),
    (Expect(variables={"meds": [{"dosage": "5 mg"}, {}]}), "variables", "`meds`"),
    (Expect(variables={"receipt": {"reference": "T-1"}}), "variables", "`receipt` is None"),
    (Expect(annotations=("nitro_used",)), "annotations", "`nitro_used`"),
    (Expect(recalled=("novel",)), "recalled", "'novel'"),
    (Expect(stored=("walks",)), "stored", "no memory stored with 'walks'"),
    (Expect(completed=True), "completed", "completed is false, expected true"),
    (Expect(fallback=True), "fallback", "fallback is false"),
    (Expect(guard="max_visits"), "guard", "guard is none, expected max_visits"),
    (Expect(interrupted=("hub",)), "interrupted", "go back to none, expected `hub`"),
]


@pytest.mark.parametrize(("expect", "key", "words"), BROKEN, ids=lambda v: str(v)[:30])
def test_a_broken_expectation_names_its_key_and_what_happened(
    expect: Expect, key: str, words: str
) -> None:
    (found,) = check(expect, seen())
    assert found.key == key and words in found.message


def test_a_guard_named_or_any() -> None:
    stopped = seen(guard="max_visits", fallback=True)
    assert check(Expect(guard="max_visits", fallback=True), stopped) == []
    assert check(Expect(guard=True), stopped) == []
    assert check(Expect(guard=False), stopped)[0].message == "guard is true, expected false"
