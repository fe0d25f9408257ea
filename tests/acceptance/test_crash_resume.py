"""Kill a real session process mid-turn with SIGKILL, resume it in a new one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import alive
from tests.conftest import FIXTURES, ROOT

DRIVER = FIXTURES / "runtime" / "crash_driver.py"
FIRST = """\
a: [{exit: stay, reason: greet, reply: Say go.}, {exit: count, reason: go, reply: ""}]
b: [{sleep: 60, then: {exit: stay, reason: done, reply: never}}]
"""
SECOND = "b: [{exit: stay, reason: done, reply: Done.}]\n"


def spawn(tmp_path: Path, command: str, script: str, **env: str) -> subprocess.Popen[str]:
    path = tmp_path / f"{command}.yaml"
    path.write_text(script)
    environment = {**os.environ, "CRASH_DIR": str(tmp_path), "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen(
        [sys.executable, str(DRIVER), command, str(tmp_path / "store"), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        cwd=ROOT,
    )


def wait_for(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("the session process never reached the kill point")


def in_tool_worker(process: subprocess.Popen[str]) -> int:
    """The pid of the tool worker, once the tool says (on stderr) that it is inside."""
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("IN-TOOL "):
            return int(line.split()[1])
    raise AssertionError("the session process ended before the tool ran")


def tool_done(tmp_path: Path) -> bool:
    db = tmp_path / "store" / "sessions.sqlite"
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM events WHERE kind='tool_call'").fetchall()
    return any('"done"' in r[0] for r in rows)


@pytest.mark.parametrize("where", ["inside the tool", "inside the next LLM call"])
def test_sigkill_mid_turn_then_resume_loses_nothing_and_repeats_nothing(
    tmp_path: Path, where: str
) -> None:
    in_tool = where == "inside the tool"
    first = spawn(tmp_path, "start", FIRST, **({"CRASH_SLEEP": "60"} if in_tool else {}))
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "TURN Say go."
    worker = 0
    if in_tool:
        worker = in_tool_worker(first)  # effect written, step not committed
    else:
        wait_for(lambda: tool_done(tmp_path))
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    if worker:
        wait_for(lambda: not alive(worker), timeout=10)  # the tool worker died with it

    second = spawn(tmp_path, "resume", SECOND)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    result = json.loads(out)
    recovered = result["recovered"]
    assert recovered["reply"] == "Done." and recovered["path"] == ["a", "count", "apply", "b"]
    assert result["variables"]["count"] == 1  # the counter step ran once
    assert result["variables"]["outcome"] == {"label": "run 1", "applied": True}
    assert [m["content"] for m in result["transcript"]] == ["hi", "Say go.", "go", "Done."]
    effects = (tmp_path / "effects.txt").read_text().split()
    attempts = (tmp_path / "attempts.txt").read_text().split()
    assert effects == ["crash1:2:2"]  # applied exactly once
    assert attempts == (["crash1:2:2", "crash1:2:2"] if in_tool else ["crash1:2:2"])
