"""A tool that hangs, crashes or misbehaves cannot take `cgraph run` with it.

Each test runs the real command (`cgraph run --jsonl`, offline) on a graph whose first
state calls a tool from `tests/fixtures/runtime/isolation_tools.py`; the tool runs in a
worker process, whose pid it writes down so the test can watch it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.commands import alive, environment, start_run
from tests.conftest import FIXTURES

WAIT = 120.0  # seconds for one reply on a busy machine
GRAPH = """\
cgraph: 1
name: isolation
start: call
tools:
  - name: charge_card
    handler: isolation_tools:{handler}
    timeout: {timeout}
states:
  call:
    type: side_effect
    objective: Call the tool.
    tool: charge_card
    arguments: {{label: "{{{{ message }}}}"}}
    result: got
    next_state: done
    on_error: failed
{done}{failed}"""
REPLY_STATE = """\
  {name}:
    type: action
    objective: Tell the user.
    actions: [Tell the user.]
    intra_state_navigation_guidelines: [Stay until the user says bye.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never invent facts.]
    say: "{say}"
    exit_conditions:
      - description: The user says bye.
        next_state: END
"""


def graph(folder: Path, handler: str, timeout: float = 30) -> Path:
    shutil.copy(FIXTURES / "runtime" / "isolation_tools.py", folder)
    done = REPLY_STATE.format(name="done", say="done {{ got.said }}")
    failed = REPLY_STATE.format(name="failed", say="failed")
    path = folder / "isolation.yaml"
    path.write_text(GRAPH.format(handler=handler, timeout=timeout, done=done, failed=failed))
    return path


def spawn(folder: Path, handler: str, timeout: float = 30, *more: str) -> subprocess.Popen[str]:
    path = graph(folder, handler, timeout)
    options = ["--store", str(folder / "store"), *more]
    return start_run(path, *options, cwd=folder, env=environment(TOOL_DIR=str(folder)))


def send(process: subprocess.Popen[str], text: str, key: str = "m1") -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"id": key, "text": text}) + "\n")
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], WAIT)
    assert ready, "no reply in time"
    found: dict[str, Any] = json.loads(process.stdout.readline())
    return found


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = process.communicate("", timeout=WAIT)
    assert process.returncode == 0, err
    assert "Traceback" not in err, err
    return out, err


def why_failed(turn: dict[str, Any]) -> str:
    assert turn["path"] == ["call", "failed"] and turn["reply"] == "failed", turn
    [taken] = [t for t in turn["transitions"] if t["exit"] == "on_error"]
    return str(taken["reason"])


def pid_of(folder: Path, name: str) -> int:
    return int((folder / f"{name}.pid").read_text())


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (its tool workers)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while we looked
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.mark.parametrize(
    ("handler", "said"),
    [
        ("segfault", "tool `charge_card` crashed the tool worker: killed by signal SIGSEGV"),
        ("exit3", "tool `charge_card` crashed the tool worker: exited with status 3"),
        ("not_json", "tool `charge_card` returned a value that is not JSON"),
    ],
)
def test_a_crashing_tool_takes_on_error_and_the_session_goes_on(
    tmp_path: Path, handler: str, said: str
) -> None:
    run = spawn(tmp_path, handler)
    assert said in why_failed(send(run, "charge it"))
    assert alive(run.pid)
    out, _err = finish(run)
    assert out == ""  # the one reply was read above; nothing else reached stdout
    assert not alive(pid_of(tmp_path, handler))


def test_a_tool_in_an_endless_loop_is_killed_at_its_timeout(tmp_path: Path) -> None:
    run = spawn(tmp_path, "spin", 1)
    began = time.monotonic()
    reason = why_failed(send(run, "charge it"))
    assert "tool `charge_card` timed out after 1s (its worker was stopped)" in reason
    assert time.monotonic() - began < WAIT
    assert not alive(pid_of(tmp_path, "spin"))  # gone when the reply comes, not later
    # The CPU is idle again: neither the session nor any worker of it is busy.
    processes = [run.pid, *children(run.pid)]
    before = sum(cpu_seconds(p) for p in processes if alive(p))
    time.sleep(1.0)
    after = sum(cpu_seconds(p) for p in processes if alive(p))
    assert after - before < 0.3
    finish(run)


def test_a_tool_that_prints_does_not_corrupt_the_jsonl_output(tmp_path: Path) -> None:
    run = spawn(tmp_path, "chatty")
    turn = send(run, "hello")
    assert turn["reply"] == "done hello" and turn["path"] == ["call", "done"]
    out, err = finish(run)
    assert out == ""
    assert "chatty tool says hello" in err and "chatty tool writes to fd 1" in err


def test_the_workers_end_with_the_command(tmp_path: Path) -> None:
    run = spawn(tmp_path, "chatty")
    send(run, "hello")
    workers = children(run.pid)
    assert pid_of(tmp_path, "chatty") in workers
    finish(run)
    assert eventually(lambda: not any(alive(p) for p in workers))


def test_kill_9_during_a_tool_call_leaves_no_worker_and_the_resume_keeps_the_key(
    tmp_path: Path,
) -> None:
    first = spawn(tmp_path, "charge", 300, "--session", "pay1")
    assert first.stdin is not None
    first.stdin.write(json.dumps({"id": "m1", "text": "charge it"}) + "\n")
    first.stdin.flush()
    assert eventually(lambda: (tmp_path / "effects.txt").exists(), WAIT)  # inside the tool
    workers = children(first.pid)
    assert pid_of(tmp_path, "charge") in workers
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=WAIT)
    assert first.returncode == -signal.SIGKILL
    assert eventually(lambda: not any(alive(p) for p in workers))  # no orphan worker

    second = spawn(tmp_path, "charge", 300, "--session", "pay1")
    out, _err = finish(second)
    [recovered] = [json.loads(line) for line in out.splitlines()]
    assert recovered["recovered"] and recovered["reply"] == "done charge it"
    attempts = (tmp_path / "attempts.txt").read_text().split()
    assert attempts == ["pay1:1:1", "pay1:1:1"]  # called again, with the same key
    assert (tmp_path / "effects.txt").read_text().split() == ["pay1:1:1"]  # applied once


@pytest.mark.parametrize("how", ["a timeout", "kill -9 of the command"])
def test_what_a_tool_started_ends_with_its_worker(tmp_path: Path, how: str) -> None:
    timed_out = how == "a timeout"
    run = spawn(tmp_path, "spawner", 2 if timed_out else 300)
    if timed_out:
        assert "timed out after 2s" in why_failed(send(run, "charge it"))
    else:
        assert run.stdin is not None
        run.stdin.write(json.dumps({"id": "m1", "text": "charge it"}) + "\n")
        run.stdin.flush()
        assert eventually(lambda: (tmp_path / "grandchild.pid").exists(), WAIT)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=WAIT)
    started = [pid_of(tmp_path, "spawner"), pid_of(tmp_path, "grandchild")]
    assert eventually(lambda: not any(alive(p) for p in started))
    if timed_out:
        finish(run)


def escaped(folder: Path) -> list[int]:
    return [int(pid) for pid in (folder / "escaped.pids").read_text().split()]


@pytest.mark.parametrize(
    "how", ["a timeout", "the end of the command", "kill -9 of the command", "a worker crash"]
)
def test_what_a_tool_started_in_a_session_of_its_own_ends_too(tmp_path: Path, how: str) -> None:
    # `setsid sleep 1000` and a double fork leave the worker's process group: a kill of
    # the group alone left both running, re-parented to init, after the session ended.
    handler = {"a timeout": "escaper_hangs", "kill -9 of the command": "escaper_hangs"}
    handler |= {"the end of the command": "escaper", "a worker crash": "escaper_crashes"}
    run = spawn(tmp_path, handler[how], 2 if how == "a timeout" else 300)
    if how == "kill -9 of the command":
        assert run.stdin is not None
        run.stdin.write(json.dumps({"id": "m1", "text": "charge it"}) + "\n")
        run.stdin.flush()
        assert eventually(lambda: (tmp_path / "escaped.pids").exists(), WAIT)
        assert all(alive(pid) for pid in escaped(tmp_path))
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=WAIT)
    elif how == "the end of the command":
        assert send(run, "charge it")["reply"] == "done charge it"
        assert all(alive(pid) for pid in escaped(tmp_path))  # they live while the session does
        finish(run)
    else:
        reason = why_failed(send(run, "charge it"))
        assert "timed out after 2s" in reason or "exited with status 3" in reason
        assert not any(alive(pid) for pid in escaped(tmp_path))  # gone when the reply comes
        finish(run)
    assert eventually(lambda: not any(alive(pid) for pid in escaped(tmp_path)))
