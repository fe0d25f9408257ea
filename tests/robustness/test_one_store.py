"""Four `cgraph run` processes on one store at once: distinct sessions, then one session.

Distinct sessions all run to the end, their turns intact. On one session only one process
runs: the others are refused at once with a clear message (an OS lock on the session),
and the store holds the one run's turns, never a mix.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.commands import start_run
from tests.conftest import FIXTURES

GRAPH = FIXTURES / "runtime" / "campaign.yaml"
SCRIPT = FIXTURES / "runtime" / "campaign_script.yaml"
PROCESSES = 4
WAIT = 240.0


def spawn(store: Path, session: str) -> subprocess.Popen[str]:
    options = ["--store", str(store), "--session", session, "--model", f"scripted:{SCRIPT}"]
    return start_run(GRAPH, *options)


def messages(store: Path, session: str) -> list[str]:
    with sqlite3.connect(store / "sessions.sqlite") as db:
        rows = db.execute(
            "SELECT data FROM events WHERE session=? AND kind='user_message' ORDER BY seq",
            (session,),
        ).fetchall()
    return [json.loads(data)["text"] for (data,) in rows]


@pytest.mark.slow
def test_four_sessions_at_once_each_keep_their_turns(tmp_path: Path) -> None:
    runs = [spawn(tmp_path, f"s{n}") for n in range(PROCESSES)]
    sent = {n: [f"p{n} says {k}" for k in range(3)] for n in range(PROCESSES)}
    results = [
        run.communicate("\n".join(sent[n]) + "\n", timeout=WAIT) for n, run in enumerate(runs)
    ]
    for n, (run, (out, err)) in enumerate(zip(runs, results, strict=True)):
        assert run.returncode == 0, err
        assert f"no session `s{n}` in {tmp_path}: started it" in err  # a new name starts one
        assert [json.loads(line)["user"] for line in out.splitlines()] == sent[n]
        assert messages(tmp_path, f"s{n}") == sent[n]


@pytest.mark.slow
def test_one_session_in_four_processes_runs_in_one(tmp_path: Path) -> None:
    runs = [spawn(tmp_path, "shared") for _ in range(PROCESSES)]
    for n, run in enumerate(runs):  # every process has a line to send, none has ended
        assert run.stdin is not None
        run.stdin.write(f"from process {n}\n")
        run.stdin.flush()
    deadline = time.monotonic() + WAIT
    while sum(run.poll() is not None for run in runs) < PROCESSES - 1:
        assert time.monotonic() < deadline, "the other processes were never refused"
        time.sleep(0.1)
    results = [run.communicate(timeout=WAIT) for run in runs]
    codes = [run.returncode for run in runs]
    assert sorted(codes) == [0, 1, 1, 1]
    winner = codes.index(0)
    for code, (_, err) in zip(codes, results, strict=True):
        if code:
            assert err.strip().endswith(
                "error: session `shared` is open in another process; "
                "wait for that run to end, or start another session"
            )
    assert messages(tmp_path, "shared") == [f"from process {winner}"]
