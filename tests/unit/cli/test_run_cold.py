"""What a cold `cgraph run` loads and says: the model prepared once, with a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgraph.cli.opening import PREPARING, first_turn_texts
from cgraph.spec.load import load_graph
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
CGRAPH = Path(sys.executable).parent / "cgraph"


def run(store: Path, cache: Path, line: str = "Hello Ava.") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CGRAPH_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    command = [str(CGRAPH), "run", str(CHECKIN), "--jsonl", "--store", str(store)]
    return subprocess.run(
        command, input=f"{line}\n", capture_output=True, text=True, timeout=300, env=env
    )


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
