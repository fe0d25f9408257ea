"""Provider faults while a turn streams in a state that offers tools.

Each run streams turns (`Session.stream`, the real litellm client) from a local server
(`tests.servers.chat`) in a state that offers `count_files`: the model calls it, then
answers. The server fails one or two of the turn's requests at random — an error status,
a stream that breaks off after a few pieces, a stall past the turn's deadline — in the
round of tool calls or in the answer after it. Whatever fails, the turn must end: with a
valid reply, or with the fallback and no half answer left standing (a shown answer is
retracted); no step leaves an undeclared transition or a tool call without its outcome;
the session resumes with nothing to finish and takes a new turn; the store passes
SQLite's integrity check.

`CGRAPH_STREAM_FAULTS` sets the number of runs (6 in `make test`, 120 in `make stress`).
"""

from __future__ import annotations

import os
import random
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import LiteLLMModel
from cgraph.runtime.ask.streaming import Delta, Retracted
from cgraph.runtime.state.records import Turn
from cgraph.session import Session
from tests.acceptance.test_litellm_stream import TOOL_TOP, answer
from tests.servers.chat import LLAMA_CPP_PYTHON, OPENAI, Calls, serve
from tests.unit.runtime._runtime import action, simple, write
from tests.unit.runtime.tools.test_calls import TOOLS

RUNS = int(os.environ.get("CGRAPH_STREAM_FAULTS", "6"))
FAULTS = ("500", "break", "stall")
TIMEOUT = 2.0  # the turn's deadline: a stall costs this much
STATES = {"START", "a", "END"}


def tool_graph(folder: Path) -> Path:
    (folder / "agent_tools.py").write_text(textwrap.dedent(TOOLS))
    body = action("a", {"END": "The user says bye."}, tools="[count_files]")
    return write(folder, simple(start="a", top=TOOL_TOP, body=body))


def shown(chunks: list[Any]) -> str:
    """What a terminal shows once retractions are applied."""
    text = ""
    for chunk in chunks:
        if isinstance(chunk, Retracted):
            text = ""
        elif isinstance(chunk, Delta):
            text += chunk.text
    return text


def check_turn(turn: Turn, chunks: list[Any], where: str) -> None:
    # No half answer may stand: what was shown is the reply, or nothing (the terminal then
    # prints the reply, or the fallback, whole).
    assert turn.reply and shown(chunks) in ("", turn.reply), where
    for move in turn.transitions:
        assert {move.from_state, move.to_state} <= STATES, where
    assert all(call["status"] in ("done", "failed", "refused") for call in turn.tool_calls), where


def one_run(folder: Path, run: int) -> str:
    rng = random.Random(run)
    faults = {rng.randint(0, 3): rng.choice(FAULTS) for _ in range(rng.randint(1, 2))}
    behaviour = rng.choice([OPENAI, LLAMA_CPP_PYTHON])
    where = f"run {run}: {behaviour.name}, faults {faults}"
    calls = Calls((("count_files", {"folder": "docs"}),))
    answers = [calls, answer("There are 2 files."), calls, answer("Still 2.")]
    options = {"piece": rng.choice([3, 16]), "break_after": rng.randint(0, 6)}
    store = folder / "store"
    with serve(behaviour, answers=answers, faults=faults, **options) as server:
        model = LiteLLMModel("openai/m", api_base=server.base, timeout=TIMEOUT, retries=1)
        session = Session.start(tool_graph(folder), model=model, store=store)
        for message in ("How many files in docs?", "And now?"):
            *chunks, turn = session.stream(message, remember=False)
            assert isinstance(turn, Turn), where
            check_turn(turn, chunks, where)
        session.close()
    with serve(OPENAI, answers=[answer("Back again.")]) as healthy:
        model = LiteLLMModel("openai/m", api_base=healthy.base, timeout=TIMEOUT)
        again = Session.resume(session.id, store=store, model=model)
        assert again.recovered is None and again.view.interrupted is None, where
        assert again.send("hello").number == 3, where
        again.close()
    with sqlite3.connect(store / "sessions.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",), where
    return where


@pytest.mark.slow
@pytest.mark.parametrize("run", range(RUNS))
def test_a_provider_fault_while_streaming_a_tool_turn_ends_the_turn_cleanly(
    tmp_path: Path, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    one_run(tmp_path, run)
