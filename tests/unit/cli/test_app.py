"""Start-up of the command line: the collector is paused for `cgraph` alone."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

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


@pytest.mark.slow
def test_cgraph_run_keeps_it_paused_until_its_first_reply_then_freezes_the_start_up() -> None:
    code = """
import gc, sys
sys.argv = ['/usr/bin/cgraph', 'run', '--help']
import cgraph.cli.app as app
from cgraph.cli import started
try:
    app.main()
except SystemExit:
    pass
print(gc.isenabled(), gc.get_freeze_count() > 0)
started()
print(gc.isenabled(), gc.get_freeze_count() > 0)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.splitlines()[-2:] == ["False False", "True True"], done.stderr
