"""`cgraph test`'s per-decision accuracy: a decision is a turn that expects a `state` or
`exits`; the report counts them right, wrong or asked, for the run and per graph, in
text, JSON and HTML, with each choice's confidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import environment
from tests.conftest import GRAPHS, ROOT
from tests.unit.runtime._runtime import action, simple, write

BODY = (
    action("help", {"date": "The customer wants another date.", "resend": "Send the tickets."})
    + action("date", {"END": "The customer is done."})
    + action("resend", {"END": "The customer is done."})
)
SCRIPTED = """\
cgraph-test: 1
graph: g.yaml
model:
  scripted:
    help:
      - {exit: date, reason: said date, scores: {date: 0.875, resend: 0.125}}
      - {exit: clarify, reason: two fit, reply: "The date, or the tickets?"}
      - {exit: resend, reason: said tickets, scores: {resend: 0.75, date: 0.25}}
    date: {exit: stay, reason: asking, reply: Which date?}
    resend: {exit: stay, reason: sent, reply: Sent.}
cases:
  - name: a new date
    turns:
      - user: I need another date
        expect: {state: date}
      - user: the 5th
        expect: {reply_contains: date}
  - name: the chooser asks instead
    turns:
      - user: about my booking
        expect: {state: resend}
  - name: a wrong exit
    turns:
      - user: send them again
        expect: {state: date}
"""


def cgraph_test(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cgraph", "test", str(folder), *options]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=300
    )


@pytest.fixture
def scripted(tmp_path: Path) -> Path:
    write(tmp_path, simple(start="help", body=BODY))
    (tmp_path / "g.scripted.test.yaml").write_text(SCRIPTED, encoding="utf-8")
    return tmp_path


def test_the_report_counts_decisions_right_wrong_and_asked(scripted: Path) -> None:
    done = cgraph_test(scripted, "--html", str(scripted / "report.html"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    # Four turns ran; the one expecting only a reply is no decision.
    assert "decisions: 1/3 right (33.3 %), 1 wrong, 1 asked" in lines
    (graph,) = [line for line in lines if line.startswith("decisions of ")]
    assert graph.endswith("g.yaml with scripted answers: 1/3 right (33.3 %), 1 wrong, 1 asked")
    # Per graph, then the run's, just above the summary.
    assert lines.index(graph) + 1 == lines.index("decisions: 1/3 right (33.3 %), 1 wrong, 1 asked")
    assert lines[-2].startswith("decisions: ")
    page = (scripted / "report.html").read_text(encoding="utf-8")
    assert "decisions: 1/3 right (33.3 %), 1 wrong, 1 asked" in page
    assert "right · date (confidence 0.88)" in page
    assert "asked · clarify (asked the user)" in page
    assert "wrong · resend (confidence 0.75)" in page


def test_a_failed_turns_why_says_how_sure_its_choice_was(scripted: Path) -> None:
    done = cgraph_test(scripted)  # scripted answers go in case order: no -k
    assert "why: help (action) chose resend (confidence 0.75): date 0.250, resend" in done.stdout
    assert "why: help (action) chose clarify (asked the user): " in done.stdout


def test_the_json_report_has_the_decisions_and_each_turns_verdict(scripted: Path) -> None:
    done = cgraph_test(scripted, "--format", "json")
    document = json.loads(done.stdout)
    counted = {k: document["decisions"][k] for k in ("decisions", "right", "wrong", "asked")}
    assert counted == {"decisions": 3, "right": 1, "wrong": 1, "asked": 1}
    assert document["decisions"]["percent"] == 33.3
    (graph,) = document["decisions"]["graphs"]
    assert (graph["model"], graph["right"], graph["asked"]) == ("scripted answers", 1, 1)
    turns = {r["name"]: r["turns"] for r in document["runs"]}
    first, second = turns["a new date"]
    assert (first["decision"], second["decision"]) == ("right", None)
    assert {"state": "help", "chosen": "date", "confidence": 0.875} in first["choices"]
    (asked,) = turns["the chooser asks instead"]
    assert (asked["decision"], asked["clarified"]) == ("asked", True)


def test_a_run_without_decisions_prints_no_decision_line(tmp_path: Path) -> None:
    write(tmp_path, simple(start="help", body=BODY))
    only_replies = SCRIPTED.split("cases:")[0] + (
        "cases:\n  - name: replies\n    turns:\n      - user: hi\n"
        "        expect: {reply_contains: date}\n"
    )
    (tmp_path / "g.test.yaml").write_text(only_replies, encoding="utf-8")
    done = cgraph_test(tmp_path)
    assert "decisions:" not in done.stdout


def test_a_turn_that_expects_only_a_path_is_no_decision(tmp_path: Path) -> None:
    # The path says where the turn went, yet no `state` or `exits` says where it should
    # have gone: neither the right path nor a wrong one counts as a decision.
    write(tmp_path, simple(start="help", body=BODY))
    paths = SCRIPTED.split("cases:")[0] + (
        "cases:\n  - name: a right path\n    turns:\n      - user: hi\n"
        "        expect: {path: [help, date]}\n"
        "  - name: a wrong path\n    turns:\n      - user: hi\n"
        "        expect: {path: [help, resend]}\n"
    )
    (tmp_path / "g.test.yaml").write_text(paths, encoding="utf-8")
    done = cgraph_test(tmp_path, "--format", "json")
    runs = {r["name"]: r for r in json.loads(done.stdout)["runs"]}
    assert (runs["a right path"]["passed"], runs["a wrong path"]["passed"]) == (True, False)
    assert [t["decision"] for r in runs.values() for t in r["turns"]] == [None, None]
    assert "decisions:" not in cgraph_test(tmp_path).stdout


OFFLINE = f"""\
cgraph-test: 1
graph: {GRAPHS / "medical_checkin.yaml"}
cases:
  - name: a clear start
    turns:
      - user: Hi
        expect: {{state: welcome_patient}}
      - user: Yes, I'm ready.
        expect: {{state: medication_adherence_check}}
      - user: Yes, I took all my pills.
        expect: {{state: vasodilator_check}}
  - name: an expectation the chooser does not meet
    start: {{state: medication_adherence_check}}
    turns:
      - user: Yes, I took all my pills.
        expect: {{state: check_chest_pain}}
"""


@pytest.mark.slow  # the offline chooser loads its embedding model
def test_offline_the_figure_is_the_choosers_own(tmp_path: Path) -> None:
    (tmp_path / "checkin.test.yaml").write_text(OFFLINE, encoding="utf-8")
    done = cgraph_test(tmp_path, "--model", "semantic")
    assert done.returncode == 1, done.stderr
    assert "decisions: 3/4 right (75.0 %), 1 wrong, 0 asked" in done.stdout
    assert "medical_checkin.yaml with semantic: 3/4 right (75.0 %)" in done.stdout


def test_a_turn_in_which_nothing_was_chosen_is_no_decision() -> None:
    from cgraph.runtime.state.records import Decision
    from cgraph.spec.testfile import Expect
    from cgraph.testing.decisions import verdict
    from tests.unit.testing.test_expectations import seen

    ruled = Decision(state="ask", kind="action", chosen="check", reason="when", attempts=0)
    asked = Decision(state="ask", kind="action", chosen="check", reason="said", attempts=1)
    expect = Expect(state="check_shortness_of_breath")
    assert verdict(expect, seen(decisions=(ruled,)), []) is None  # the path decided
    assert verdict(expect, seen(decisions=(ruled, asked)), []) == "right"
