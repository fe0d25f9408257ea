"""Hand-offs through the real `cgraph` command: the help desk's test files pass with every
exit taken, and `cgraph run --model scripted:FILE` routes a handed-back request again on
the turn it was said (triage → seats → triage → status)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.commands import CGRAPH, finished
from tests.conftest import FIXTURES

DESK = FIXTURES / "handoff"
SCRIPT = """\
triage:
  - {exit: seats, reason: the customer wants another seat}
  - {exit: status, reason: the customer asks about the flight}
  - {exit: stay, reason: the status is told, reply: "Anything else?"}
seats:
  - {exit: stay, reason: no seat named yet, reply: "Which seat would you like?"}
  - {exit: triage, reason: a question about the flight, not the seat}
"""


def test_the_help_desk_test_files_pass_with_every_exit_taken() -> None:
    done = finished([str(CGRAPH), "test", str(DESK), "--coverage", "--fail-under", "100"])
    assert "4 passed, 0 failed" in done.stdout, done.stdout


def test_a_scripted_model_hands_a_request_back_and_the_hub_routes_it(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    command = [sys.executable, "-m", "cgraph", "run", str(DESK / "help_desk.yaml"), "--jsonl"]
    command += ["--model", f"scripted:{tmp_path / 'script.yaml'}", "--store", str(tmp_path)]
    done = finished(command, ["I'd like another seat.", "Is my flight on time?"])
    turns = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [t["state"] for t in turns] == ["seats", "triage"]
    assert [(m["from"], m["to"]) for m in turns[1]["transitions"]] == [
        ("seats", "triage"),
        ("triage", "status"),
        ("status", "triage"),
    ]
    assert turns[1]["reply"] == "Flight CG123 is on time, leaving at 14:05. Anything else?"
