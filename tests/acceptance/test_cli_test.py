"""`cgraph test` through the real console script: the example suites, a broken graph,
file errors and the machine-readable formats."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import GRAPHS, ROOT

CGRAPH = Path(sys.executable).parent / "cgraph"
RETRY = GRAPHS / "tests" / "request_lifecycle.retry.test.yaml"


def cgraph(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CGRAPH), *args], capture_output=True, text=True, cwd=cwd, timeout=600, check=False
    )


def test_every_example_graph_passes_its_tests_with_90_percent_of_exits() -> None:
    done = cgraph("test", "graphs/tests", "--coverage", "--fail-under", "90")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^\d+ passed, 0 failed\n\Z", done.stdout, re.MULTILINE)
    table = {line.split()[0]: line.split() for line in done.stdout.splitlines() if "%" in line}
    for graph in sorted(GRAPHS.glob("*.yaml")):
        row = table[f"graphs/{graph.name}"]
        assert float(row[-1].rstrip("%")) >= 90, row


def broken_copy(tmp_path: Path) -> Path:
    """The check-in and its tests, with one exit retargeted and one exit's examples gone."""
    shutil.copytree(GRAPHS / "tests", tmp_path / "tests")
    text = (GRAPHS / "medical_checkin.yaml").read_text()
    retargeted = "        next_state: flag_chest_pain\n"
    assert retargeted in text
    text = text.replace(retargeted, "        next_state: check_shortness_of_breath\n")
    unexampled = re.compile(r"(next_state: record_nitro_use\n)\s+examples: \[.*?\]\n")
    text, removed = unexampled.subn(r"\1", text)
    assert removed == 1
    (tmp_path / "medical_checkin.yaml").write_text(text)
    return tmp_path / "tests" / "medical_checkin.test.yaml"


def test_a_broken_graph_fails_its_cases_naming_the_state_and_the_exit(tmp_path: Path) -> None:
    tests = broken_copy(tmp_path)
    done = cgraph("test", str(tests), "-k", "chest pain is flagged", "-k", "nitro")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "✗ medical_checkin.test.yaml: chest pain is flagged and blocks exercise" in out
    assert "`check_chest_pain` took exit `check_shortness_of_breath_2`" in out
    assert "path_includes: the path missed `flag_chest_pain`" in out
    assert "✗ medical_checkin.test.yaml: nitroglycerin use is recorded" in out
    assert "in state `vasodilator_check`: expected exit `record_nitro_use`" in out
    assert "-record_nitro_use" in out  # the path diff
    assert "why: vasodilator_check (action) chose" in out
    assert re.search(r"^0 passed, \d+ failed, \d+ skipped$", out, re.MULTILINE)
