"""A session killed (SIGKILL) while in a graph it moved into by `next_state:
file.yaml#state` resumes there in a new `cgraph run`, and leaves that graph the way it
came: to the `graph` state of the root that ran the crossing graph."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.commands import start_run
from tests.conftest import FIXTURES

GRAPH = FIXTURES / "flows" / "root.yaml"
SIZE = "parts/order.yaml#size"
FIRST = f"""\
side.yaml#a:
  - {{exit: stay, reason: greet, reply: "The usual?"}}
  - {{exit: "{SIZE}", reason: the usual, reply: ""}}
"{SIZE}": [{{sleep: 60, then: {{exit: stay, reason: never, reply: never}}}}]
"""
SECOND = f"""\
"{SIZE}":
  - {{exit: stay, reason: ask, reply: "How many cups?"}}
  - {{exit: stay, reason: given, reply: Noted., slots: {{cups: 3}}}}
done: [{{exit: stay, reason: bye, reply: All done.}}]
"""


def cgraph_run(store: Path, script: Path) -> subprocess.Popen[str]:
    options = ["--session", "s1", "--store", str(store), "--model", f"scripted:{script}"]
    return start_run(GRAPH, *options)


def moved_across(store: Path) -> bool:
    db = store / "sessions.sqlite"
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE kind='transition'").fetchall()
    return any(json.loads(r[0]).get("to") == SIZE for r in rows)


def wait_for_move(store: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if moved_across(store):
            return
        time.sleep(0.05)
    raise AssertionError("the session never moved into the other graph")


def test_killed_in_the_graph_moved_into_then_resumed_and_returned(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (tmp_path / "first.yaml").write_text(FIRST)
    (tmp_path / "second.yaml").write_text(SECOND)
    first = cgraph_run(store, tmp_path / "first.yaml")
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write("hi\nthe usual\n")
    first.stdin.flush()
    assert json.loads(first.stdout.readline())["reply"] == "The usual?"
    wait_for_move(store)  # the move is committed; the model call after it never returns
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL

    second = cgraph_run(store, tmp_path / "second.yaml")
    out, err = second.communicate("three cups\n", timeout=300)
    assert second.returncode == 0, err
    recovered, turn = (json.loads(line) for line in out.splitlines())
    assert recovered["recovered"] and recovered["user"] == "the usual"
    assert recovered["state"] == SIZE and recovered["reply"] == "How many cups?"
    assert recovered["path"] == ["side.yaml#a", SIZE]
    assert turn["path"] == [SIZE, "s", "done"] and turn["reply"] == "All done."
    assert not turn["completed"] and "Traceback" not in err
