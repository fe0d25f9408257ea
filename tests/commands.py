"""The real `cgraph` command in a subprocess: a `run --jsonl` to feed and kill, or a run to
its end; and the processes it leaves behind, read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.conftest import ROOT

CGRAPH = Path(sys.executable).parent / "cgraph"
"""The installed command (its console script), as a user runs it."""


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with the tree under test first on the Python path."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def start_run(
    graph: Path, *options: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """`cgraph run GRAPH --jsonl OPTIONS` started, its three streams piped as text: the
    caller writes lines, reads replies, kills it or waits for it."""
    command = [sys.executable, "-m", "cgraph", "run", str(graph), "--jsonl", *options]
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=dict(env) if env is not None else environment(),
    )


def ran(
    command: Sequence[str],
    lines: Sequence[str] = (),
    *,
    cwd: Path = ROOT,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`command` run to its end from `cwd` on `lines` (one a line), whatever its exit code."""
    return subprocess.run(
        list(command),
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(env) if env is not None else environment(),
        timeout=timeout,
        check=False,
    )


def finished(
    command: Sequence[str],
    lines: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`command` run to its end from ROOT on `lines` (one a line); it must exit 0, and its
    stderr says why when it does not."""
    done = ran(command, lines, env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


def alive(pid: int) -> bool:
    """Running: not gone, and not a zombie waiting for a reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
