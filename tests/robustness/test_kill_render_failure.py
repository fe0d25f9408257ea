"""kill -9 during and right after a turn whose render failed, then resume.

The failed step is committed with its turn (`render_failed`, the fallback reply), so a
resumed session neither runs it again in that turn nor loses the turn: every message is
stored once, each turn finished once, with one `render_failed` event each.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.commands import start_run
from tests.robustness.run_probe import FALLBACK, stored, write_graph
from tests.robustness.test_kill_campaign import WAIT, line, read_reply

# Runs out its render budget (1 s), then fails: a kill can land inside it.
SLOW = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


def spawn(graph: Path, store: Path) -> subprocess.Popen[str]:
    return start_run(graph, "--model", "semantic", "--store", str(store), "--session", "s1")


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=WAIT)


def resume(graph: Path, store: Path, lines: str) -> list[str]:
    """The resumed process fed `lines`; the ids it answered (a turn finished on resume
    is printed first, marked `recovered`, and a re-sent line it answered is marked
    `duplicate`)."""
    again = spawn(graph, store)
    out, err = again.communicate(lines, timeout=WAIT)
    assert again.returncode == 0 and "Traceback" not in err, err
    turns = [json.loads(text) for text in out.splitlines()]
    assert all(t["reply"] == FALLBACK for t in turns), turns
    return [t["id"] for t in turns if not t.get("recovered")]


def check_store(store: Path) -> None:
    events = stored(store)
    messages = [(d["key"], d["text"]) for _, kind, d in events if kind == "user_message"]
    assert messages == [("1", "hi"), ("2", "again")]  # none lost or doubled
    assert [n for n, kind, _ in events if kind == "turn_completed"] == [1, 2]
    failed = [(n, d["state"], d["field"]) for n, kind, d in events if kind == "render_failed"]
    assert failed == [(1, "mark", "set"), (2, "mark", "set")]  # not repeated in turn 1
    replies = [(n, d["text"]) for n, kind, d in events if kind == "reply"]
    assert replies == [(1, FALLBACK), (2, FALLBACK)]


@pytest.mark.slow
def test_a_kill_right_after_a_failed_render_loses_and_repeats_nothing(tmp_path: Path) -> None:
    graph, store = write_graph(tmp_path / "g", "set", SLOW), tmp_path / "store"
    first = spawn(graph, store)
    assert first.stdin is not None
    first.stdin.write(line("1", "hi"))
    first.stdin.flush()
    reply = read_reply(first)
    assert (reply["id"], reply["reply"], reply["fallback"]) == ("1", FALLBACK, True)
    kill(first)  # at once: memory extraction, or waiting for the next line
    assert resume(graph, store, line("2", "again")) == ["2"]
    check_store(store)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.9])
def test_a_kill_during_a_failing_render_finishes_the_turn_once(
    tmp_path: Path, delay: float
) -> None:
    graph, store = write_graph(tmp_path / "g", "set", SLOW), tmp_path / "store"
    first = spawn(graph, store)
    assert first.stdin is not None and first.stderr is not None
    first.stderr.readline()  # the process is up: it names the session
    first.stdin.write(line("1", "hi"))
    first.stdin.flush()
    time.sleep(delay)  # inside the one-second render, on an idle machine
    kill(first)
    # The protocol: re-send every line without a reply, with its id.
    ids = resume(graph, store, line("1", "hi") + line("2", "again"))
    assert sorted(ids) == ["1", "2"]
    check_store(store)
