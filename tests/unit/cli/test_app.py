"""Start-up of the command line: the collector is paused for `cgraph` alone."""

from __future__ import annotations

import gc
import subprocess
import sys

CHECK = "import gc, sys; {setup}; import cgraph.cli.app as app; print(gc.isenabled())"


def run(setup: str) -> str:
    code = CHECK.format(setup=setup)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout


def test_a_program_importing_the_cli_keeps_its_garbage_collector() -> None:
    import cgraph.cli.app  # noqa: F401

    assert gc.isenabled()
    assert run("sys.argv[0] = 'my_tool'").strip() == "True"


def test_the_cgraph_command_starts_with_the_collector_paused() -> None:
    assert run("sys.argv[0] = '/usr/bin/cgraph'").strip() == "False"
