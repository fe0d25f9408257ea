"""Run the real `cgraph lint` on one file with a time and memory limit, and judge it.

A file survives when lint answers within the limits with exit 0 or 1, valid JSON
diagnostics that each carry a line and column, and no traceback: never a crash signal,
a hang, or an internal error, whatever the file holds.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

from tests.commands import CGRAPH, environment

SECONDS = 30  # wall-clock: generous, the machine may be busy; CPU is held to 10 s
CPU_SECONDS = 10
MEMORY_BYTES = 1_500_000_000  # address space; lint of any file stays far below
STRESS = int(os.environ.get("CGRAPH_LINT_FUZZ", "0") or 0)
"""`make stress` sets it: how many fuzzed files to try instead of the few a test run tries."""


def examples(normal: int) -> int:
    """How many generated cases a fuzz test tries: a few, or `CGRAPH_LINT_FUZZ` of them."""
    return STRESS or normal


def _limits() -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    """`cgraph lint -f json PATH` under the limits (a hang is a `TimeoutExpired`)."""
    return subprocess.run(
        [str(CGRAPH), "lint", "-f", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        preexec_fn=_limits,  # setrlimit only: safe between fork and exec
        check=False,
        env=environment(PYTHONFAULTHANDLER="1"),
    )


def assert_survives(path: Path) -> list[dict[str, object]]:
    """Lint `path` and fail unless lint stayed in bounds; the diagnostics it reported."""
    done = lint(path)
    shown = f"{path.name}: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.returncode in (0, 1), shown  # a negative code is a crash signal
    assert "Traceback" not in done.stderr + done.stdout, shown
    assert "internal error" not in done.stderr.lower(), shown
    diagnostics: list[dict[str, object]] = json.loads(done.stdout)
    for diagnostic in diagnostics:
        assert isinstance(diagnostic["line"], int), diagnostic
        assert isinstance(diagnostic["column"], int), diagnostic
    assert (done.returncode == 1) == any(d["severity"] == "error" for d in diagnostics), shown
    return diagnostics
