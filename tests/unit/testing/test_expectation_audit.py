"""Every expectation key can fail: one real run per key, the key set wrong, must fail on it.

One turn of the contacts flow ("I want to add a contact." opens the add flow over the hub,
an interruption that goes back to `hub`) is run by `cgraph test`'s runner offline, once
with every key right (it passes) and once per key with only that key wrong (each run must
fail, and on that key alone). The keys come from `Expect` and the shipped schema the parser
checks test files with, so a new key without a wrong value here fails the first test.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.spec.schema import published
from cgraph.spec.testfile import SCHEMA_NAME, Expect
from cgraph.testing.runner import FileResult, Options, Runner
from tests.conftest import GRAPHS

MESSAGE = "I want to add a contact."
RIGHT: dict[str, Any] = {
    "state": "add_contact.yaml#ask_handle",
    "path": ["hub", "add_contact", "add_contact.yaml#ask_handle"],
    "path_includes": ["add_contact.yaml#ask_handle"],
    "path_excludes": ["list_contacts"],
    "exits": ["START -> hub", "hub -> add_contact", "ask_handle"],
    "reply_contains": "handle",
    "reply_matches": r"\?$",
    "reply_excludes": "zebra",
    "variables": {},
    "annotations": [],
    "recalled": [],
    "stored": [],
    "completed": False,
    "fallback": False,
    "guard": False,
    "clarified": False,
    "interrupted": ["hub"],
}
WRONG: dict[str, Any] = {
    "state": "hub",
    "path": ["hub"],
    "path_includes": ["list_contacts"],
    "path_excludes": ["hub"],
    "exits": ["hub -> goodbye"],
    "reply_contains": "zebra",
    "reply_matches": "^zebra",
    "reply_excludes": "handle",
    "variables": {"handle": "@nobody"},
    "annotations": ["never_set"],
    "recalled": ["a memory nobody has"],
    "stored": ["a memory nobody stored"],
    "completed": True,
    "fallback": True,
    "guard": True,
    "clarified": True,
    "interrupted": [],
}
"""Per key, a value this turn breaks; `interrupted: []` while one is open included."""
ONLY_RIGHT = {"variables", "annotations", "recalled", "stored"}
"""Keys whose right value here is their default (nothing to expect): checked wrong only."""


def test_every_key_has_a_wrong_value() -> None:
    # The keys the parser accepts are the shipped schema's, which is made from `Expect`.
    accepted = set(published(SCHEMA_NAME)["$defs"]["Expect"]["properties"])
    assert set(WRONG) == {f.name for f in fields(Expect)} == set(RIGHT) == accepted


def case(name: str, expect: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "turns": [{"user": MESSAGE, "expect": expect}]}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> FileResult:
    right = {k: v for k, v in RIGHT.items() if k not in ONLY_RIGHT}
    cases = [case("right", right)] + [case(key, {key: value}) for key, value in WRONG.items()]
    tests = {"cgraph-test": 1, "graph": str(GRAPHS / "contacts.yaml"), "cases": cases}
    path: Path = tmp_path_factory.mktemp("audit") / "audit.test.yaml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False), encoding="utf-8")
    (result,) = Runner(Options()).run_paths([path])
    return result


def test_the_turn_passes_with_every_key_right(results: FileResult) -> None:
    (run,) = [r for r in results.runs if r.name == "right"]
    assert run.passed, [m.message for t in run.turns for m in t.mismatches]


@pytest.mark.parametrize("key", sorted(WRONG))
def test_a_wrong_key_fails_its_case_on_that_key(results: FileResult, key: str) -> None:
    (run,) = [r for r in results.runs if r.name == key]
    assert not run.passed
    assert [m.key for t in run.turns for m in t.mismatches] == [key]
