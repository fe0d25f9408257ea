"""The outbox keeps one connection open and commits without an fsync: a memory put is
still there after the process is killed right after `put`."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from cgraph.backends.memory.pending import Outbox
from cgraph.runtime.ports import Memory
from tests.conftest import ROOT


def test_a_memory_put_survives_the_process_killed_right_after(tmp_path: Path) -> None:
    code = f"""
import os, signal
from pathlib import Path
from cgraph.backends.memory.pending import Outbox
from cgraph.runtime.ports import Memory
outbox = Outbox(Path({str(tmp_path)!r}))
for turn in (1, 2):
    kept = Memory(f"m{{turn}}", f"fact {{turn}}", "personal", "ann", "s", "q", turn, 1.0)
    outbox.put("ann", [kept])
os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    waiting = Outbox(tmp_path).waiting()
    assert [(m.id, m.text, m.turn) for m in waiting["ann"]] == [
        ("m1", "fact 1", 1),
        ("m2", "fact 2", 2),
    ]


def test_two_outboxes_on_one_folder_see_each_others_memories(tmp_path: Path) -> None:
    writer, reader = Outbox(tmp_path), Outbox(tmp_path)
    assert not reader.holds("ann")
    writer.put("ann", [Memory("m1", "fact", "personal", "ann", "s", "q", 1, 1.0)])
    assert reader.holds("ann") and reader.drop("ann") == 1
    assert not writer.holds("ann")
