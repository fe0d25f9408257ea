"""A template that fails while `cgraph run` runs: the fallback reply, an audited event,
exit 0 at the end of input, and a resumed session that moves on (no traceback ever)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

FALLBACK = "Sorry, something went wrong."
TALK = {
    "type": "action",
    "objective": "Chat.",
    "actions": ["Chat."],
    "intra_state_navigation_guidelines": ["Stay."],
    "action_guidelines": ["Be brief."],
    "boundary_constraints": ["None."],
    "exit_conditions": [{"description": "The user says bye.", "next_state": "END"}],
}


def graph(tmp_path: Path, say: str = "Hi.", value: str = "x") -> Path:
    """A tiny graph: an annotation that sets `v`, then an action that says `say`."""
    mark = {"type": "annotation", "objective": "Mark.", "set": {"v": value}, "next_state": "talk"}
    states = {"mark": mark, "talk": {**TALK, "say": say}}
    doc = {"cgraph": 1, "name": "t", "start": "mark", "fallback": FALLBACK, "states": states}
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(doc))
    script = tmp_path / "script.yaml"
    script.write_text('"*": {exit: stay, reason: r, reply: Hello}\n')
    return path


def run(
    tmp_path: Path, lines: str, *more: str, model: str = ""
) -> subprocess.CompletedProcess[str]:
    model = model or f"scripted:{tmp_path / 'script.yaml'}"
    command = [sys.executable, "-m", "cgraph", "run", str(tmp_path / "graph.yaml"), "--jsonl"]
    return subprocess.run(
        [*command, "--model", model, "--store", str(tmp_path / "store"), *more],
        input=lines,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def turns(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def failures(tmp_path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(tmp_path / "store" / "sessions.sqlite") as conn:
        rows = conn.execute("SELECT data FROM events WHERE kind='render_failed'").fetchall()
    return [json.loads(r[0]) for r in rows]


@pytest.mark.parametrize(
    ("say", "value", "state", "field"),
    [
        ("Hi.", "{{ range(10**9) | list }}", "mark", "set"),
        ("Hi.", "{{ [1][5].x }}", "mark", "set"),
        ("Hi.", "{{ 'a' * 2000000 }}", "mark", "set"),
    ],
    ids=["set-huge-range", "set-undefined", "set-too-large"],
)
def test_a_failing_render_answers_with_the_fallback_and_resume_moves_on(
    tmp_path: Path, say: str, value: str, state: str, field: str
) -> None:
    graph(tmp_path, say=say, value=value)
    first = turns(run(tmp_path, "hi\n"))
    assert [t["reply"] for t in first] == [FALLBACK]
    assert first[0]["fallback"] is True
    assert "{{" not in first[0]["reply"]  # the template's source is never shown
    failed = failures(tmp_path)
    assert [(f["state"], f["field"]) for f in failed] == [(state, field)]
    assert failed[0]["cause"]

    again = turns(run(tmp_path, "hello\n", "--session", first[0]["session"]))
    assert [t["turn"] for t in again] == [2]
    assert again[0]["reply"] == FALLBACK


def test_a_failing_say_is_never_shown_the_fallback_is(tmp_path: Path) -> None:
    graph(tmp_path, say="{{ 1/0 }}")
    (reply,) = turns(run(tmp_path, "hi\n", model="semantic"))  # it stays with the say
    assert reply["reply"] == FALLBACK
