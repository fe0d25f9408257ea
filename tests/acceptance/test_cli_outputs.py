"""Outputs a command cannot write, and graph paths that are no graph file: one located
`error:` line and an exit code, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.commands import CGRAPH, ran
from tests.conftest import GRAPHS

RESTAURANT = str(GRAPHS / "restaurant_reservation.yaml")
TESTS = str(GRAPHS / "tests" / "restaurant_reservation.test.yaml")


def cgraph(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args], ["hi"], cwd=cwd)


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["render", RESTAURANT, "-o", "a_file/x.svg"], 2, "--output a_file/x.svg: cannot write"),
        (["memory", "export", "--user", "ann", "--output", "a_file/x.json"], 1, "--output a_file"),
        (["run", RESTAURANT, "--record", "a_file/x.jsonl"], 1, "--record a_file/x.jsonl: cannot"),
        (["test", TESTS, "--html", "a_file/report.html"], 2, "cannot write a_file"),
        (["test", TESTS, "--record", "a_file/cassettes"], 2, "cannot write a_file/cassettes/"),
    ],
)
def test_an_output_that_cannot_be_written_is_one_error_line(
    tmp_path: Path, args: list[str], code: int, said: str
) -> None:
    (tmp_path / "a_file").write_text("a file, not a folder\n")
    done = cgraph(*args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and said in errors[0], done.stderr


@pytest.mark.parametrize("command", ["run", "render", "topology"])
def test_a_graph_argument_that_is_no_file_says_what_it_is(tmp_path: Path, command: str) -> None:
    folder = cgraph(command, str(GRAPHS), cwd=tmp_path)
    assert f"error: {GRAPHS}: is a folder; name one graph file\n" in folder.stderr
    missing = cgraph(command, "nowhere.yaml", cwd=tmp_path)
    assert "error: nowhere.yaml: no such file\n" in missing.stderr
    assert folder.returncode == missing.returncode != 0
    assert "Traceback" not in folder.stderr + missing.stderr
