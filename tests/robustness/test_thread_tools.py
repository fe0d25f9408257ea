"""`isolation: thread` tools misbehaving inside the real `cgraph run --jsonl`.

A thread tool runs in the session's own process. Each run sends a random series of
behaviours to one: answer, raise, `sys.exit`, `KeyboardInterrupt`, sleep past its timeout
(abandoned, still running), spin a core for a while past it, return a set, print to
stdout. Each turn must end as the graph says (the `done` reply, or `on_error` with the
cause), stdout must stay one JSON object per turn, the process must exit 0 with no
traceback; a run killed (`kill -9`) during a call must resume, finish that turn and go on.

The runs go through a program that embeds the library (`thread_driver`): a thread tool is
for handlers that share the application's process. `cgraph run` itself is checked too:
what such a handler prints must not reach its `--jsonl` output.

`CGRAPH_THREAD_TOOLS` sets the number of runs (4 in `make test`, 40 in `make stress`).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.commands import environment, start_run
from tests.conftest import ROOT

RUNS = int(os.environ.get("CGRAPH_THREAD_TOOLS", "4"))
LINES = 8
WAIT = 120.0
TOOLS = """\
import sys
import time


def act(how, idempotency_key):
    if how == "raise":
        raise ValueError("the handler broke")
    if how == "exit":
        sys.exit(3)
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "sleep":
        time.sleep(30)
    if how == "spin":
        ends = time.monotonic() + 3
        while time.monotonic() < ends:
            pass
    if how == "set":
        return {1, 2}
    if how == "print":
        print("a thread tool writes to stdout")
    return {"said": how}
"""
GRAPH = """\
cgraph: 1
name: thread_tools
start: call
tools:
  - {name: t, handler: "thread_tools:act", isolation: thread, timeout: 1}
states:
  call:
    type: side_effect
    objective: Call the tool.
    tool: t
    arguments: {how: "{{ message }}"}
    result: got
    next_state: done
    on_error: failed
  done:
    type: action
    objective: Say it worked.
    actions: [Say it worked.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Be polite.]
    say: done
    exit_conditions:
      - {description: The user asks again., next_state: call}
      - {description: The user says bye., next_state: END}
  failed:
    type: action
    objective: Say it failed.
    actions: [Say it failed.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Be polite.]
    say: failed
    exit_conditions:
      - {description: The user asks again., next_state: call}
      - {description: The user says bye., next_state: END}
"""
FAILS = {
    "raise": "tool `t` failed: ValueError: the handler broke",
    "exit": "tool `t` failed: SystemExit: 3",
    "interrupt": "tool `t` failed: KeyboardInterrupt",
    "sleep": "tool `t` timed out after 1s",
    "spin": "tool `t` timed out after 1s",
    "set": "tool `t` returned a value that is not JSON",
}
BEHAVIOURS = [*FAILS, "ok", "print"]


def write(folder: Path) -> Path:
    (folder / "thread_tools.py").write_text(TOOLS, encoding="utf-8")
    (folder / "graph.yaml").write_text(GRAPH, encoding="utf-8")
    return folder / "graph.yaml"


def spawn(folder: Path, session: str) -> subprocess.Popen[str]:
    """The embedding program (`thread_driver`) on `folder`'s graph."""
    write(folder)
    command = [sys.executable, "-m", "tests.robustness.thread_driver", str(folder), session]
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=environment(),
    )


def send(process: subprocess.Popen[str], text: str) -> None:
    assert process.stdin is not None
    process.stdin.write(text + "\n")
    process.stdin.flush()


def read(process: subprocess.Popen[str], where: str) -> dict[str, Any]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], WAIT)
    assert ready, f"{where}: no reply in time"
    line = process.stdout.readline()
    try:
        found: dict[str, Any] = json.loads(line)
    except ValueError:
        raise AssertionError(f"{where}: stdout is not one JSON object a line: {line!r}") from None
    return found


def check(turn: dict[str, Any], how: str, where: str) -> None:
    ended = "failed" if how in FAILS else "done"
    assert turn["path"][-1] == ended and not turn["fallback"], f"{where} {how}: {turn}"
    if how in FAILS:
        taken = [t for t in turn["transitions"] if t["exit"] == "on_error"]
        assert len(taken) == 1 and FAILS[how] in taken[0]["reason"], f"{where} {how}: {turn}"


def one_run(folder: Path, run: int) -> None:
    rng = random.Random(run)
    series = [rng.choice(BEHAVIOURS) for _ in range(LINES)]
    killed_at = rng.randint(0, LINES - 1) if run % 2 else None
    where = f"run {run}: {series}"
    where += f", killed during line {killed_at + 1}" if killed_at is not None else ""
    first = spawn(folder, f"run-{run}")
    for number, how in enumerate(series):
        send(first, how)
        if number == killed_at:
            time.sleep(rng.uniform(0.05, 0.8))  # inside the call, or just after it
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=WAIT)
            resume(folder, run, series, number, where)
            return
        check(read(first, where), how, where)
    out, err = first.communicate("", timeout=WAIT)
    assert first.returncode == 0 and "Traceback" not in err and out == "", f"{where}\n{err}"


def resume(folder: Path, run: int, series: list[str], number: int, where: str) -> None:
    """Resume the killed session: the turn the kill cut is finished first (if its message
    was kept), then the lines after it are sent."""
    again = spawn(folder, f"run-{run}")
    out, err = again.communicate("".join(f"{how}\n" for how in series[number + 1 :]), WAIT * 3)
    assert again.returncode == 0 and "Traceback" not in err, f"{where}\n{err}"
    turns = [json.loads(line) for line in out.splitlines()]  # each line one JSON object
    if turns and turns[0].get("recovered"):
        recovered = turns.pop(0)
        assert recovered["user"] == series[number], where
        check(recovered, series[number], where)
    assert [turn["user"] for turn in turns] == series[number + 1 :], where
    for turn, how in zip(turns, series[number + 1 :], strict=True):
        check(turn, how, where)


@pytest.mark.slow
@pytest.mark.parametrize("run", range(RUNS))
def test_a_misbehaving_thread_tool_never_takes_the_session_with_it(
    tmp_path: Path, run: int
) -> None:
    one_run(tmp_path, run)


@pytest.mark.slow
def test_what_a_thread_tool_prints_never_reaches_cgraph_runs_jsonl(tmp_path: Path) -> None:
    graph = write(tmp_path)
    process = start_run(graph, "--store", str(tmp_path / "s"), "--model", "semantic", cwd=tmp_path)
    out, err = process.communicate('{"id": "p", "text": "print"}\n', timeout=WAIT)
    assert process.returncode == 0, err
    (turn,) = [json.loads(line) for line in out.splitlines()]  # one JSON object, nothing else
    assert turn["id"] == "p" and turn["path"][:2] == ["call", "done"]
    assert "a thread tool writes to stdout" in err
