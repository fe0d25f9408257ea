"""The kill -9 campaign: real `cgraph run --jsonl` processes killed at random points.

Each run sends keyed lines (`{"id": ..., "text": ...}`) one at a time, the way a client
following the README's protocol does, SIGKILLs the process at a random point (between
turns, inside a model call, inside memory extraction, before the session exists), then
resumes it and re-sends every line it has no reply for. The store must then hold every
message exactly once, in order, each turn finished: nothing lost, duplicated or repeated.

Runs without ids do the same with plain lines (see "without ids" below): half follow the
README's protocol (`/history`, then re-send what the session does not hold), half re-send
blindly; no committed turn may be lost either way.

`CGRAPH_KILL_RUNS` sets the number of runs of each kind (20 in `make test`, 200 in
`make stress`).
"""

from __future__ import annotations

import json
import os
import queue
import random
import select
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.commands import start_run
from tests.conftest import FIXTURES

GRAPH = FIXTURES / "runtime" / "campaign.yaml"
SCRIPT = FIXTURES / "runtime" / "campaign_script.yaml"
RUNS = int(os.environ.get("CGRAPH_KILL_RUNS", "20"))
BATCHES = 4
WAIT = 120.0  # seconds for one reply on a busy machine


def spawn(store: Path, session: str) -> subprocess.Popen[str]:
    options = ["--store", str(store), "--session", session, "--model", f"scripted:{SCRIPT}"]
    return start_run(GRAPH, *options)


def line(key: str, text: str) -> str:
    return json.dumps({"id": key, "text": text}) + "\n"


def read_reply(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], WAIT)
    assert ready, "no reply in time"
    text = process.stdout.readline()
    assert text, f"the process ended early: {process.wait()}"
    found: dict[str, Any] = json.loads(text)
    return found


def stored(store: Path, session: str) -> list[tuple[int, str, dict[str, Any]]]:
    with sqlite3.connect(store / "sessions.sqlite") as db:
        rows = db.execute(
            "SELECT turn, kind, data FROM events WHERE session=? ORDER BY seq", (session,)
        ).fetchall()
    return [(turn, kind, json.loads(data)) for turn, kind, data in rows]


def one_run(store: Path, run: int) -> str:
    """Kill, resume, check; returns where the kill landed (for the failure message)."""
    rng = random.Random(run)
    session = f"run-{run}"
    texts = [f"message {n} of run {run}" for n in range(rng.randint(2, 5))]
    keys = [f"{run}.{n}" for n in range(len(texts))]
    answered = rng.randint(0, len(texts) - 1)  # replies the client reads before the kill
    delay = rng.uniform(0.0, 0.6)

    first = spawn(store, session)
    assert first.stdin is not None
    for n in range(answered):
        first.stdin.write(line(keys[n], texts[n]))
        first.stdin.flush()
        assert read_reply(first)["id"] == keys[n]
    first.stdin.write(line(keys[answered], texts[answered]))
    first.stdin.flush()
    time.sleep(delay)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=WAIT)
    first.stdin.close()
    assert first.stdout is not None and first.stderr is not None
    first.stdout.close()
    first.stderr.close()

    # The protocol: re-send, with the same ids, every line that has no reply yet.
    second = spawn(store, session)
    again = "".join(line(k, t) for k, t in zip(keys[answered:], texts[answered:], strict=True))
    out, err = second.communicate(again, timeout=WAIT * 2)
    where = f"run {run}: killed {delay:.2f}s after line {answered + 1} of {len(texts)}"
    assert second.returncode == 0, f"{where}\n{err}"
    assert "Traceback" not in err, f"{where}\n{err}"
    check(store, session, texts, keys, answered, out, err, where)
    return where


def check(
    store: Path,
    session: str,
    texts: list[str],
    keys: list[str],
    answered: int,
    out: str,
    err: str,
    where: str,
) -> None:
    events = stored(store, session)
    messages = [(d["text"], d.get("key")) for _, kind, d in events if kind == "user_message"]
    assert messages == list(zip(texts, keys, strict=True)), where  # none lost or doubled
    finished = [turn for turn, kind, _ in events if kind == "turn_completed"]
    assert finished == list(range(1, len(texts) + 1)), where  # each turn finished once
    assert not any(kind == "undo" for _, kind, _ in events), where
    lines = [json.loads(text) for text in out.splitlines()]
    recovered = [t for t in lines if t.get("recovered")]
    if recovered:  # printed first, and said so on stderr
        assert lines[0] is recovered[0] and recovered[0]["user"] == texts[answered], where
        assert recovered[0]["id"] == keys[answered], where  # the store holds its key
        assert "recovered turn" in err, where
    fresh = [t["id"] for t in lines if not t.get("recovered") and not t.get("duplicate")]
    replayed = [t["id"] for t in lines if t.get("duplicate")]
    assert sorted(fresh + replayed) == sorted(keys[answered:]), where  # one reply per line
    assert len(set(fresh)) == len(fresh), where


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_kill_9_at_random_points_then_resume(tmp_path: Path, batch: int) -> None:
    runs = range(batch, RUNS, BATCHES)
    for run in runs:
        one_run(tmp_path / "store", run)  # one store: the sessions pile up, as in real use


# ----- without ids ------------------------------------------------------------------------
#
# A client that sends plain lines cannot ask the session which of them it holds by id. The
# protocol then (README, "Scripts and tests"): after a crash, resume with the same
# `--session`, read the recovered turn if one is printed first (it answers the line the
# client had no reply for), ask `/history`, and re-send only the lines after the last one
# the session holds. Half the runs follow it; the other half re-send blindly every line
# they had no reply for, as a client without ids and without the protocol would. What
# must hold either way, whatever the kill hit: no committed turn is lost, every turn is
# finished, the session resumes and takes a new turn, and the store passes SQLite's
# integrity check. A blindly re-sent line the session already held makes a second turn:
# those are counted, not failed (the protocol's runs must have none).


def line_queue(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stdout, line by line, read by a thread ("" at its end): two lines that
    arrive at once would leave the second in the reader's buffer, where `select` on the
    pipe does not see it."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for text in process.stdout:
            lines.put(text)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def plain_history(
    process: subprocess.Popen[str], lines: queue.Queue[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """What the resumed session prints before answering `/history`, and the user lines
    its transcript holds."""
    assert process.stdin is not None
    process.stdin.write("/history\n")
    process.stdin.flush()
    before: list[dict[str, Any]] = []
    while True:
        text = lines.get(timeout=WAIT)
        assert text, f"the process ended early: {process.wait()}"
        shown = json.loads(text)
        if shown.get("command") == "history":
            said = [m["content"] for m in shown["transcript"] if m["role"] == "user"]
            return before, said
        before.append(shown)


def one_plain_run(store: Path, run: int) -> tuple[str, bool, int]:
    """Kill, resume (by the protocol or blindly), check; where the kill landed, whether
    the run was blind, and the duplicated lines."""
    rng = random.Random(10_000 + run)
    blind = (run // BATCHES) % 2 == 1  # every other run of each batch
    session = f"plain-{run}"
    texts = [f"plain message {n} of run {run}" for n in range(rng.randint(2, 5))]
    answered = rng.randint(0, len(texts) - 1)
    delay = rng.uniform(0.0, 0.6)
    where = f"plain run {run}: killed {delay:.2f}s after line {answered + 1} of {len(texts)}"
    where += " (blind)" if blind else ""

    first = spawn(store, session)
    assert first.stdin is not None and first.stdout is not None and first.stderr is not None
    for text in texts[:answered]:
        first.stdin.write(text + "\n")
        first.stdin.flush()
        assert read_reply(first)["user"] == text, where
    first.stdin.write(texts[answered] + "\n")
    first.stdin.flush()
    time.sleep(delay)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=WAIT)
    for stream in (first.stdin, first.stdout, first.stderr):
        stream.close()

    second = spawn(store, session)
    lines = line_queue(second)
    last = answered - 1  # blind: every line without a reply is sent again
    if not blind:
        recovered, held = plain_history(second, lines)
        assert all(t.get("recovered") for t in recovered), where
        last = max((n for n, text in enumerate(texts) if text in held), default=-1)
    assert second.stdin is not None and second.stderr is not None
    second.stdin.write("".join(text + "\n" for text in texts[last + 1 :]))
    second.stdin.close()
    err = second.stderr.read()  # stdout is drained by its reader meanwhile
    second.wait(timeout=WAIT * 2)
    assert second.returncode == 0 and "Traceback" not in err, f"{where}\n{err}"
    duplicated = check_plain(store, session, texts, answered, where)
    assert blind or duplicated == 0, where
    return where, blind, duplicated


def check_plain(store: Path, session: str, texts: list[str], answered: int, where: str) -> int:
    events = stored(store, session)
    said = [d["text"] for _, kind, d in events if kind == "user_message"]
    assert said[:answered] == texts[:answered], where  # no committed turn lost
    assert set(said) == set(texts), where  # every line made a turn in the end
    finished = [turn for turn, kind, _ in events if kind == "turn_completed"]
    assert finished == list(range(1, len(said) + 1)), where  # each finished, once
    third = spawn(store, session)  # still resumable: it takes one more turn
    out, err = third.communicate("one more\n", timeout=WAIT)
    assert third.returncode == 0, f"{where}\n{err}"
    assert json.loads(out.splitlines()[-1])["turn"] == len(said) + 1, where
    with sqlite3.connect(store / "sessions.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), where
    return len(said) - len(texts)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(BATCHES))
def test_kill_9_without_ids_loses_no_turn_and_every_session_resumes(
    tmp_path: Path, batch: int
) -> None:
    outcomes = [one_plain_run(tmp_path / "store", run) for run in range(batch, RUNS, BATCHES)]
    blind = [duplicated for _, was_blind, duplicated in outcomes if was_blind]
    print(  # the campaign's figures (`pytest -s`)
        f"\nkill -9 without ids, batch {batch}: {len(outcomes) - len(blind)} by the protocol "
        f"(0 duplicated), {len(blind)} blind ({sum(1 for d in blind if d)} duplicated a line)"
    )
