"""What a cold `cgraph run` loads and says: the model prepared once, with a note."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.backends.offline.warming import first_turn_texts, later_texts
from cgraph.backends.onnx_embed import STALE, onnx_model_path, prepared_path
from cgraph.cli.opening import PREPARING, counts_memories
from cgraph.runtime.ports import ExitOption, Question
from cgraph.session import Session
from cgraph.spec.load import load_graph
from tests.commands import CGRAPH, environment, ran
from tests.conftest import GRAPHS

pytestmark = pytest.mark.slow  # real `cgraph` processes, models or Chroma


CHECKIN = GRAPHS / "medical_checkin.yaml"


def run(store: Path, cache: Path, line: str = "Hello Ava.") -> subprocess.CompletedProcess[str]:
    env = environment(CGRAPH_CACHE=str(cache), HF_HUB_OFFLINE="1")
    command = [str(CGRAPH), "run", str(CHECKIN), "--jsonl", "--store", str(store)]
    return ran(command, [line], env=env)


@pytest.mark.slow
def test_the_first_run_prepares_the_model_and_says_so_once(tmp_path: Path) -> None:
    first = run(tmp_path / "a", tmp_path / "cache")
    second = run(tmp_path / "b", tmp_path / "cache")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert PREPARING in first.stderr
    assert PREPARING not in second.stderr
    replies = [json.loads(done.stdout)["reply"] for done in (first, second)]
    assert replies[0] == replies[1]


@pytest.mark.slow
def test_a_new_users_run_stores_without_chroma_and_the_next_run_recalls(tmp_path: Path) -> None:
    store, cache = tmp_path / "store", tmp_path / "cache"
    first = run(store, cache, "Hi, I am allergic to penicillin.")
    assert first.returncode == 0, first.stderr
    assert (store / "memory" / "pending.sqlite3").is_file()
    assert not (store / "memory" / "chroma.sqlite3").exists()  # chromadb never imported
    second = run(store, cache, "Hello, my penicillin allergy is acting up")
    assert second.returncode == 0, second.stderr
    recalled = json.loads(second.stdout)["recalled"]
    assert [m["text"] for m in recalled] == ["Hi, I am allergic to penicillin."]


def test_the_first_turns_texts_are_those_of_the_start_state_and_the_global_exits() -> None:
    graph = load_graph(CHECKIN)
    texts = first_turn_texts(graph)
    assert "Yes, I'm ready." in texts and "I have crushing chest pain right now." in texts
    assert "Hello." in texts  # a conversational move
    assert "I took everything this morning." not in texts  # a later state's example
    assert all("{" not in t for t in texts)


def test_the_warm_up_texts_of_a_graph_that_starts_without_exits(tmp_path: Path) -> None:
    path = tmp_path / "graph.yaml"
    path.write_text(
        "cgraph: 1\nname: t\nstart: mark\nstates:\n"
        "  mark: {type: annotation, objective: Mark., next_state: END}\n"
    )
    assert "Mark." in first_turn_texts(load_graph(path))


class Recording:
    """An embedder that records what it is asked for (unit vectors from the text's hash)."""

    name, dimension = "recording", 8

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen += texts
        vectors = [[float((hash(t) >> i) & 7) + 1.0 for i in range(8)] for t in texts]
        return [[x / math.sqrt(sum(y * y for y in v)) for x in v] for v in vectors]


@pytest.mark.parametrize("message", ["My breathing is normal.", "No, I didn't need the spray."])
def test_a_later_turn_embeds_nothing_of_the_graph_the_warm_up_left_out(message: str) -> None:
    graph = load_graph(CHECKIN)
    warmed, recording = {*first_turn_texts(graph), *later_texts(graph)}, Recording()
    chooser = OfflineChooser(embedder=recording)
    for state in graph.states.values():
        exits = [*graph.global_exits, *(getattr(state, "exit_conditions", None) or ())]
        options = [
            ExitOption(id=f"e{i}", description=e.description, target="END", examples=e.examples)
            for i, e in enumerate(exits)
            if e.description and "{" not in e.description
        ]
        texts = [getattr(state, "objective", None) or "", *(getattr(state, "actions", ()) or ())]
        question = Question(
            kind="action",
            state="here",
            options=tuple(options),
            allow_stay=True,
            user_messages=(message,),
            stay_prototypes=tuple(t for t in texts if t and "{" not in t),
        )
        chooser.choose(question)
    unwarmed = set(recording.seen) - warmed
    assert message in unwarmed and all(text in message for text in unwarmed)  # or its parts


@pytest.mark.parametrize(
    "message", ["Hello Ava, good morning to you.", "No, not today.", "I have chest pain"]
)
def test_a_first_turn_embeds_nothing_of_the_graph_the_warm_up_left_out(
    tmp_path: Path, message: str
) -> None:
    graph, recording = load_graph(CHECKIN), Recording()
    session = Session.start(graph, model=OfflineChooser(embedder=recording), store=tmp_path)
    session.send(message)
    unwarmed = set(recording.seen) - set(first_turn_texts(graph))
    assert unwarmed and all(text in message for text in unwarmed)  # the message, or part


def killed_while_preparing(cache: Path, store: Path) -> Path | None:
    """The folder a `cgraph run` killed -9 while preparing the model left behind (None when
    the preparation was over before the kill could land)."""
    env = environment(CGRAPH_CACHE=str(cache), HF_HUB_OFFLINE="1")
    command = [str(CGRAPH), "run", str(CHECKIN), "--jsonl", "--store", str(store)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            halfway = [p for p in cache.glob(".preparing-*/*/*.data") if p.stat().st_size]
            if halfway or any(p.name.endswith(".data") for p in cache.glob("*/*")):
                break
            time.sleep(0.002)
        child.send_signal(signal.SIGKILL)
    finally:
        assert child.wait(timeout=30) == -signal.SIGKILL
    left = list(cache.glob(".preparing-*"))
    prepared = [p for p in cache.glob("*/*.data") if not p.parent.name.startswith(".")]
    return left[0] if left and not prepared else None


@pytest.mark.slow
def test_a_run_killed_while_preparing_the_model_leaves_nothing_a_later_run_trusts(
    tmp_path: Path,
) -> None:
    for attempt in range(5):  # the kill must land inside the preparation (about 0.3 s)
        cache = tmp_path / f"cache{attempt}"
        left = killed_while_preparing(cache, tmp_path / f"killed{attempt}")
        if left is not None:
            break
    else:
        pytest.fail("the preparation always ended before the kill")
    past = time.time() - STALE - 60  # as if the kill was long ago
    os.utime(left, (past, past))
    again = run(tmp_path / "store", cache)
    assert again.returncode == 0, again.stderr
    assert PREPARING in again.stderr  # the killed run's files were not taken for a model
    assert not left.exists()
    prepared = prepared_path(onnx_model_path())
    assert (cache / prepared.parent.name / prepared.name).is_file()
    reply = json.loads(run(tmp_path / "other", cache).stdout)["reply"]
    assert json.loads(again.stdout)["reply"] == reply


def test_only_a_start_that_chooses_among_states_counts_the_users_memories() -> None:
    assert not counts_memories(load_graph(CHECKIN))
    assert counts_memories(load_graph(GRAPHS / "companion.yaml"))
