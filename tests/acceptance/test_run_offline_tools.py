"""`cgraph run` offline in a state that offers tools: the model calls none, and says so
once a session, in the turn that first enters the state (stderr and `--jsonl`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.commands import finished
from tests.conftest import GRAPHS

SAID = "the semantic model calls no tools: `list_files`, `read_file`, `backup_file`"


def test_the_offline_model_says_once_that_it_calls_no_tools(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "cgraph", "run", str(GRAPHS / "assistant.yaml")]
    lines = ["create a backup of the first file", "What do you mean?", "hmm, not sure"]
    done = finished([*command, "--jsonl", "--store", str(tmp_path)], lines)
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["state"] for t in turns] == ["file_tasks"] * 3  # it stays: the tools apply
    assert [[w for w in t["warnings"] if SAID in w] != [] for t in turns] == [True, False, False]
    assert done.stderr.count(SAID) == 1, done.stderr
