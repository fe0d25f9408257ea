"""What a cold `cgraph run` loads and says: the model prepared once, with a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cgraph.cli.opening import PREPARING
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
