"""SIGKILL a real `cgraph run` between a turn's reply and the end of its memory
extraction, resume it in a new process: the turn's memories are stored exactly once.

Real Chroma on disk and the real embedding model; a scripted model whose `extract`
answer takes a while, so the kill lands inside extraction. The resumed run's script
answers `extract` differently (as an LLM asked twice may), so a second extraction of
the turn would show as a second memory.

Two places to die: while the `extract` question is asked (nothing stored yet: the
resumed run asks again), and after the memories reached the store but before the
session logged it. The second is held open by taking the session store's write lock
from here and ending the input: the run takes the answer in (it is asked in the
background, taken in when the run next acts), then waits on its commit, with the memory
already in the store's outbox, and is killed there.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_memory_scope import ENV, GRAPH, cgraph
from tests.commands import start_run

FIRST = "I felt dizzy when I stood up this morning"
TOLD = "Ann felt dizzy when she stood up this morning."
ASKED_AGAIN = "Ann was lightheaded on standing."
SCRIPT = "chat: {{exit: stay, reason: listening, reply: Tell me more.}}\nextract: {extract}\n"


def script(path: Path, extract: str) -> str:
    path.write_text(SCRIPT.format(extract=extract))
    return f"scripted:{path}"


def spawn(graph: Path, store: Path, model: str) -> subprocess.Popen[str]:
    options = ["--user", "ann", "--store", str(store), "--session", "s1", "--model", model]
    return start_run(graph, *options, env=ENV)


def waiting(store: Path) -> int:
    outbox = store / "memory" / "pending.sqlite3"
    if not outbox.exists():
        return 0
    db = sqlite3.connect(outbox)
    try:
        return int(db.execute("SELECT count(*) FROM pending").fetchone()[0])
    except sqlite3.OperationalError:  # the file is there, its table not yet
        return 0
    finally:
        db.close()


def until(check: Any, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, "the process never got there"
        time.sleep(0.02)


def stored_events(store: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(store / "sessions.sqlite") as db:
        rows = db.execute("SELECT data FROM events WHERE kind = 'memory_stored'").fetchall()
    return [json.loads(row[0]) for row in rows]


@pytest.mark.parametrize("where", ["asking the model", "after storing"])
def test_a_turn_killed_during_extraction_has_its_memories_stored_once(
    tmp_path: Path, where: str
) -> None:
    graph, store = tmp_path / "checkin.yaml", tmp_path / "store"
    graph.write_text(GRAPH.format(name="checkin"))
    slow = f"{{sleep: 3, then: {{memories: [{{tier: task, text: {TOLD!r}}}]}}}}"
    first = spawn(graph, store, script(tmp_path / "first.yaml", slow))
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(FIRST + "\n")
    first.stdin.flush()
    assert json.loads(first.stdout.readline())["reply"] == "Tell me more."
    lock = sqlite3.connect(store / "sessions.sqlite", isolation_level=None, timeout=30)
    if where == "after storing":
        lock.execute("BEGIN EXCLUSIVE")  # the extraction's commit will wait for it
        first.stdin.close()  # the end of input: the run takes the answer in, then stops
        until(lambda: waiting(store) == 1)  # in the store, not yet in the session's log
        assert stored_events(store) == []
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=30) == -signal.SIGKILL
    lock.close()

    again = f"{{memories: [{{tier: task, text: {ASKED_AGAIN!r}}}]}}"
    resumed = spawn(graph, store, script(tmp_path / "second.yaml", again))
    _, err = resumed.communicate("", timeout=300)
    assert resumed.returncode == 0, err

    memories = json.loads(cgraph("memory", "export", "--user", "ann", "--store", str(store)))
    expected = TOLD if where == "after storing" else ASKED_AGAIN
    assert [(m["text"], m["session_id"], m["turn"]) for m in memories] == [(expected, "s1", 1)]
    [event] = stored_events(store)
    assert [m["id"] for m in event["memories"]] == [memories[0]["id"]]
    assert event["calls"] == (0 if where == "after storing" else 1)
