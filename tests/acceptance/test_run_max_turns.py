"""`max_turns`: a state that keeps asking (no answer takes an exit) is left for its
`on_limit` once it has answered that many turns in a row; lint checks the target."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.commands import finished, ran
from tests.conftest import ROOT

GRAPH = ROOT / "tests" / "fixtures" / "runtime" / "party_size_turns.yaml"
CGRAPH = [sys.executable, "-m", "cgraph"]


def test_offline_a_state_that_keeps_asking_hands_over_at_max_turns(tmp_path: Path) -> None:
    unsure = ["hmm, not sure", "not sure yet", "idk, maybe"]
    done = finished([*CGRAPH, "run", str(GRAPH), "--jsonl", "--store", str(tmp_path)], unsure)
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["state"] for t in turns] == ["ask_size", "ask_size", "handoff"]
    assert turns[2]["reply"] == "A person from the restaurant will help you with this."
    assert [t["guard"] for t in turns] == [None, None, "max_turns"]
    assert [t["reason"] for t in turns[2]["transitions"]] == [
        "max_turns: `ask_size` answered 2 turns in a row already"
    ]


def test_an_answer_before_the_limit_takes_the_exit(tmp_path: Path) -> None:
    said = ["hmm, not sure", "We are four."]
    done = finished([*CGRAPH, "run", str(GRAPH), "--jsonl", "--store", str(tmp_path)], said)
    assert [json.loads(line)["state"] for line in done.stdout.splitlines()] == [
        "ask_size",
        "confirmed",
    ]


def lint(tmp_path: Path, old: str, new: str) -> str:
    """`cgraph lint` of the graph with `old` written `new`: it must fail, with its output."""
    broken = tmp_path / "g.yaml"
    broken.write_text(GRAPH.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    found = ran([*CGRAPH, "lint", str(broken)], timeout=120)
    assert found.returncode == 1, found.stdout + found.stderr
    return found.stdout


def test_lint_names_an_unknown_on_limit_target_with_a_suggestion(tmp_path: Path) -> None:
    found = lint(tmp_path, "on_limit: handoff", "on_limit: handof")
    assert ":15:15 error unknown-state" in found and "did you mean `handoff`?" in found, found


def test_lint_refuses_a_max_turns_below_one(tmp_path: Path) -> None:
    found = lint(tmp_path, "max_turns: 2", "max_turns: 0")
    assert "`max_turns` of state `ask_size` (type action) is `0`, should be at least 1" in found


def test_lint_refuses_max_turns_on_a_state_that_answers_no_turns(tmp_path: Path) -> None:
    found = lint(
        tmp_path,
        "  confirmed:\n    type: action\n",
        "  noted:\n    type: annotation\n    max_turns: 1\n    next_state: confirmed\n"
        "  confirmed:\n    type: action\n",
    )
    assert "error unknown-key state `noted` (type annotation) has unknown key `max_turns`" in (
        found
    ), found
