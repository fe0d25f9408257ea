"""Memory tiers through the real CLI: `cgraph run` sessions of one user on two graphs
(offline semantic mode: real embeddings, real Chroma on disk), then `cgraph memory`.

The task tier is the session's context: another session, of the same graph or another,
never recalls it; the same session resumed does. Personal memories are the user's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest.mock import ANY

from cgraph.backends.memory.chroma import open_memory
from cgraph.runtime.ports import NewMemory
from cgraph.spec.model import MemoryConfig
from tests.commands import environment, finished

GRAPH = """\
cgraph: 1
name: {name}
start: chat
memory: {{store: every_turn, min_score: -1, top_k: 10}}
states:
  chat:
    type: action
    objective: Listen to the user.
    actions: [Listen to the user.]
    intra_state_navigation_guidelines: [Stay until the user says goodbye.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never invent facts.]
    say: Tell me more.
    included_contexts: [personal, project, task]
    exit_conditions:
      - description: The user says goodbye.
        next_state: END
        examples: [bye, goodbye]
"""
DIZZY = "Today I felt dizzy when I stood up"
ALLERGY = "I am allergic to penicillin"
KNEE = "My left knee hurts a lot today"
ENV = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False")


def cgraph(*args: str, lines: Sequence[str] = ()) -> str:
    return finished([sys.executable, "-m", "cgraph", *args], lines, env=ENV).stdout


def run(graph: Path, store: Path, session: str, *lines: str) -> list[dict[str, Any]]:
    out = cgraph(
        "run",
        str(graph),
        "--jsonl",
        "--user",
        "ann",
        "--store",
        str(store),
        "--session",
        session,
        lines=lines,
    )
    return [json.loads(line) for line in out.splitlines()]


def recalled(turn: dict[str, Any]) -> set[str]:
    return {m["text"] for m in turn["recalled"]}


def listed(store: Path, *args: str) -> set[str]:
    out = cgraph("memory", "list", "--user", "ann", "--store", str(store), *args)
    return {line.split(maxsplit=4)[4] for line in out.splitlines()}  # id tier day time text


def test_task_memories_stay_in_their_session_across_runs_and_graphs(tmp_path: Path) -> None:
    checkin, companion = tmp_path / "checkin.yaml", tmp_path / "companion.yaml"
    checkin.write_text(GRAPH.format(name="checkin"))
    companion.write_text(GRAPH.format(name="companion"))
    store = tmp_path / "store"

    first = run(checkin, store, "s1", DIZZY, ALLERGY)
    assert recalled(first[1]) == {DIZZY}  # its own context, a turn later
    for graph, session in ((checkin, "s2"), (companion, "s3")):
        other = run(graph, store, session, "Am I still dizzy?", f"{KNEE} in {session}")
        assert recalled(other[0]) == {ALLERGY}, session  # the user's, not s1's task context
    [resumed] = run(checkin, store, "s1", "Why do I feel dizzy?")
    assert recalled(resumed) == {DIZZY, ALLERGY}  # a resumed session is the same session

    knees = {f"{KNEE} in s2", f"{KNEE} in s3"}
    assert listed(store) == {DIZZY, ALLERGY} | knees  # `cgraph memory` sees everything
    assert listed(store, "--session", "s3") == {ALLERGY, f"{KNEE} in s3"}
    assert listed(store, "--session", "s1") == {DIZZY, ALLERGY}
    assert listed(store, "--session", "s1", "--tier", "task") == {DIZZY}


def imports_chromadb(graph: Path, store: Path, session: str) -> tuple[bool, dict[str, Any]]:
    """Whether one `cgraph run --jsonl` turn imported chromadb (`-X importtime`), and the turn."""
    options = ["--jsonl", "--user", "ann", "--store", str(store), "--session", session]
    command = [sys.executable, "-X", "importtime", "-m", "cgraph", "run", str(graph), *options]
    done = finished(command, ["How am I doing?"], env=ENV)
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return "chromadb" in imported, json.loads(done.stdout)


def test_a_run_opens_chroma_only_for_memories_its_session_may_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    seeded = open_memory(MemoryConfig(), store)
    seeded.add("ann", [NewMemory(DIZZY, "task", "s1"), NewMemory(ALLERGY, "personal", "s1")])
    task_only, projects = tmp_path / "task.yaml", tmp_path / "project.yaml"
    for path, tiers in ((task_only, "[task]"), (projects, "[project]")):
        graph = GRAPH.format(name=path.stem).replace("every_turn", "'off'")
        path.write_text(graph.replace("[personal, project, task]", tiers))
    # Another session's task context and a tier the graph does not recall: no Chroma.
    assert imports_chromadb(task_only, store, "s2") == (False, ANY)
    assert imports_chromadb(projects, store, "s3") == (False, ANY)
    # The session's own task context: Chroma opens, and the turn recalls it.
    opened, turn = imports_chromadb(task_only, store, "s1")
    assert opened and recalled(turn) == {DIZZY}


def test_a_store_without_memories_is_named_not_taken_for_an_empty_one(tmp_path: Path) -> None:
    # A mistyped `--store` is the usual cause: "no memories for user" would mislead.
    missing = tmp_path / "nowhere"
    for args in (("list", "--user", "ann"), ("users",)):
        done = subprocess.run(
            [sys.executable, "-m", "cgraph", "memory", *args, "--store", str(missing)],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=120,
        )
        assert done.returncode == 0 and done.stdout == ""
        assert done.stderr == f"no memories in {missing}: {missing / 'memory'} does not exist\n"
