"""`make`: the virtualenv is installed once per content of pyproject.toml, not per mtime.

Runs the real Makefile with GNU make in a copy of the project's two files; the Python and
pip it calls are stand-ins that only record their arguments, so no package is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

RECORDER = '#!/bin/sh\necho "$0 $*" >> "{log}"\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for tool in (tmp_path / "python", bin_ / "pip"):
        tool.write_text(RECORDER.format(log=tmp_path / "calls.log"))
        tool.chmod(0o755)
    return tmp_path


def installs(project: Path, target: str = "install") -> int:
    """How many pip commands `make target` ran."""
    log = project / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(
        ["make", "--no-print-directory", target, f"PYTHON={project / 'python'}"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return sum("/pip install" in call for call in calls)


def test_a_fresh_clone_installs_once_and_then_never_again(project: Path) -> None:
    assert installs(project) == 2  # pip itself, then the project
    assert installs(project) == 0
    os.utime(project / "pyproject.toml", (2e9, 2e9))  # newer than the stamp, same content
    assert installs(project) == 0
    assert len(list((project / ".venv").glob(".installed*"))) == 1


def test_a_changed_pyproject_installs_again_and_keeps_one_stamp(project: Path) -> None:
    assert installs(project) == 2
    with (project / "pyproject.toml").open("a") as file:
        file.write("\n# a new dependency\n")
    assert installs(project) == 2
    assert installs(project) == 0
    assert len(list((project / ".venv").glob(".installed*"))) == 1


def test_make_check_and_test_start_at_once_when_installed(project: Path) -> None:
    installs(project)
    os.utime(project / "pyproject.toml", (2e9, 2e9))
    dry = subprocess.run(
        ["make", "-n", "test", "check", "demo", f"PYTHON={project / 'python'}"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "pip install" not in dry.stdout


def test_the_first_install_shows_pips_own_progress(project: Path) -> None:
    """A first `make demo` installs for minutes: pip says what it does, not nothing."""
    assert installs(project) == 2
    calls = [c for c in (project / "calls.log").read_text().splitlines() if "/pip install" in c]
    assert calls and not any("--quiet" in c or " -q" in c for c in calls), calls


def test_the_readme_says_how_long_the_first_install_and_the_tests_take() -> None:
    start = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1]
    start = start.split("\n## ", 1)[0]
    assert "the first install" in start and "minutes" in start.split("the first install")[1]
    assert "`make test`" in start and "minutes on two cores" in start
