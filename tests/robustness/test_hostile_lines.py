"""Hostile input lines through the real `cgraph run`: bytes that are not UTF-8, lone
surrogates in JSON lines (in the text and in the id), NUL characters, over-long lines.

Each line that cannot be stored is refused before anything of it is kept, with a located
`error: line N: ...` on stderr; every other line is a turn, the process exits 0 with no
traceback, the session resumes, and the store passes SQLite's integrity check.

`CGRAPH_HOSTILE_LINES` sets how many random lines a run mixes in (40 in `make test`,
2,000 in `make stress`).
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import environment
from tests.conftest import FIXTURES, ROOT

GRAPH = FIXTURES / "runtime" / "campaign.yaml"
LINES = int(os.environ.get("CGRAPH_HOSTILE_LINES", "40"))
CAP = 8_000
FIXED = [
    b'{"id": "a", "text": "hi \\ud800"}',  # a lone surrogate in the text
    b'{"id": "\\udfff", "text": "hi"}',  # and in the id
    b"hi \xff",  # a byte that is not UTF-8
    b"\xc3\x28 broken sequence",
    b"nul \x00 inside",
    b'{"text": "nul \\u0000 escaped"}',
    b"x" * (CAP + 1),
    b"/memory \xed\xa0\x80",  # a surrogate encoded as UTF-8 bytes, in a command
]


def random_line(rng: random.Random) -> bytes:
    """A line of random bytes (no line breaks) or a JSON line with random escapes."""
    if rng.random() < 0.3:
        escapes = "".join(
            rng.choice(["\\ud83d", "\\u0000", "\\udc80", "a", "\\u00e9"]) for _ in "123"
        )
        return (
            json.dumps({"id": str(rng.random())})[:-1].encode()
            + f', "text": "m{escapes}"}}'.encode()
        )
    size = rng.choice([1, 5, 40, CAP - 2, CAP + 50])
    body = bytes(
        rng.choice([b for b in range(256) if b not in (10, 13)]) for _ in range(min(size, 60))
    )
    return b"m" + (body * (size // max(len(body), 1) + 1))[:size]


def storable(line: bytes, jsonl: bool) -> bool:
    """Whether `cgraph run` (`--jsonl` or not) must take the line as a turn."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if jsonl and text.startswith("{"):
        data = json.loads(text)
        text = data["text"]
        try:
            (text + data.get("id", "")).encode("utf-8")
        except UnicodeEncodeError:
            return False
    text = text.strip()
    return "\x00" not in text and len(text) <= CAP and not text.startswith("/")


def cgraph_run(
    store: Path, lines: list[bytes], *options: str
) -> subprocess.CompletedProcess[bytes]:
    script = store.parent / "script.yaml"
    script.write_text("talk: {exit: stay, reason: stays, reply: ok}\n", encoding="utf-8")
    command = [sys.executable, "-m", "cgraph", "run", str(GRAPH), "--store", str(store)]
    command += ["--model", f"scripted:{script}", *options]
    return subprocess.run(
        command,
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        cwd=ROOT,
        env=environment(),
        timeout=600,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "plain"])
def test_lines_that_cannot_be_stored_are_refused_located_and_the_run_goes_on(
    tmp_path: Path, jsonl: bool
) -> None:
    rng = random.Random(LINES)
    hostile = FIXED + [random_line(rng) for _ in range(LINES)]
    lines = [b"first"] + [line for bad in hostile for line in (bad, b"between")]
    store = tmp_path / "store"
    done = cgraph_run(store, lines, "--session", "s", *(["--jsonl"] if jsonl else []))
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    good = [n for n, line in enumerate(lines, 1) if storable(line, jsonl)]
    refused = set(range(1, len(lines) + 1)) - set(good)
    replies = done.stdout.decode("utf-8").splitlines()
    if jsonl:  # a line back for every line: its turn, or why it was refused
        shown = [json.loads(reply) for reply in replies]
        assert len(shown) == len(lines)
        assert {n for n, one in enumerate(shown, 1) if "error" in one} == refused
        assert all(one["line"] == n for n, one in enumerate(shown, 1) if "error" in one)
    else:
        assert len(replies) == len(good)
    for number in refused:
        assert f"error: line {number}: " in err, number
    assert err.count("the line is skipped") == len(refused)

    again = cgraph_run(store, [b"after"], "--session", "s", "--jsonl")
    assert again.returncode == 0, again.stderr[-3000:]
    (last,) = (json.loads(line) for line in again.stdout.splitlines())
    assert last["turn"] == len(good) + 1 and last["user"] == "after"
    with sqlite3.connect(store / "sessions.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


PIECES = ["\x1b]0;owned\x07", "\x1b[2J", "\x1b[H", "\r\n", "\r", "\n", "\x9b31m", "\u202e", "\x7f"]
PIECES += ["\x00", "\u2028", "\x08", "\t", "plain words", "é", "\x1b"]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


@pytest.mark.slow
@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "plain"])
def test_a_models_control_characters_never_reach_the_output_raw(
    tmp_path: Path, jsonl: bool
) -> None:
    rng = random.Random(LINES + 1)
    replies = [
        "ok " + "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8))) for _ in range(LINES)
    ]
    answers = [{"exit": "stay", "reason": rng.choice(PIECES), "reply": r} for r in replies]
    script = tmp_path / "hostile.yaml"
    script.write_text(json.dumps({"talk": answers}), encoding="utf-8")  # JSON is YAML
    command = [sys.executable, "-m", "cgraph", "run", str(GRAPH), "--store", str(tmp_path / "s")]
    command += ["--model", f"scripted:{script}", *(["--jsonl"] if jsonl else [])]
    lines = "".join(f"message {n}\n/why\n" for n in range(LINES)) + "/history\n"
    done = subprocess.run(
        command, input=lines.encode(), capture_output=True, cwd=ROOT, env=environment(), timeout=600
    )
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert RAW.search(out) is None and RAW.search(err) is None  # only line breaks, tabs
    shown = out.splitlines()
    if jsonl:  # each turn and each command one line; the replies read back unchanged
        turns = [json.loads(line) for line in shown if '"command"' not in line[:12]]
        assert [turn["reply"] for turn in turns] == [reply.strip() for reply in replies]
    else:  # one line per turn, on stdout
        assert len(shown) == LINES
