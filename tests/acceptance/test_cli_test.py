"""`cgraph test` through the real console script: the example suites, a broken graph,
file errors and the machine-readable formats."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.commands import CGRAPH, ran
from tests.conftest import GRAPHS, ROOT

RETRY = GRAPHS / "tests" / "request_lifecycle.retry.test.yaml"


def cgraph(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args], cwd=cwd, timeout=600)


def test_every_example_graph_passes_its_tests_with_every_exit_and_route_taken() -> None:
    done = cgraph("test", "graphs/tests", "--coverage", "--fail-under", "90")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^\d+ passed, 0 failed\n\Z", done.stdout, re.MULTILINE)
    table = {line.split()[0]: line.split() for line in done.stdout.splitlines() if "%" in line}
    for graph in sorted(GRAPHS.glob("*.yaml")):
        row = table[f"graphs/{graph.name}"]
        assert row[-1] == "100%", row
    assert "not taken" not in done.stdout  # `on_error` and `on_limit` routes included


def broken_copy(tmp_path: Path) -> Path:
    """The check-in and its tests, with one exit retargeted and one exit's examples pasted
    onto its neighbour (a "yes" still finds the exit that means yes without them)."""
    shutil.copytree(GRAPHS / "tests", tmp_path / "tests")
    text = (GRAPHS / "medical_checkin.yaml").read_text()
    retargeted = "        next_state: flag_chest_pain\n"
    assert retargeted in text
    text = text.replace(retargeted, "        next_state: check_shortness_of_breath\n")
    unexampled = re.compile(r"(next_state: record_nitro_use\n)(\s+examples: \[.*?\]\n)")
    moved = unexampled.search(text)
    assert moved is not None
    text = unexampled.sub(r"\1", text)
    neighbour = re.compile(r"(next_state: check_chest_pain\n)\s+examples: \[.*?\]\n")
    text, pasted = neighbour.subn(lambda m: m.group(1) + moved.group(2), text, count=1)
    assert pasted == 1
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
    # The retarget left `flag_chest_pain` unreachable: said, located, as `cgraph run` says it.
    assert "medical_checkin.yaml:" in done.stderr and "error unreachable-state" in done.stderr


def failing_retry_file(tmp_path: Path) -> Path:
    """The scripted retry tests (no embedding model needed) with one expectation broken."""
    text = RETRY.read_text().replace("variables: {attempt: 2}", "variables: {attempt: 3}")
    text = text.replace(
        "graph: ../request_lifecycle.yaml", f"graph: {GRAPHS}/request_lifecycle.yaml"
    )
    path = tmp_path / "retry.test.yaml"
    path.write_text(text)
    return path


def test_json_junit_and_github_formats_carry_the_failure(tmp_path: Path) -> None:
    tests = str(failing_retry_file(tmp_path))
    report = json.loads(cgraph("test", tests, "--format", "json", "--coverage").stdout)
    assert (report["passed"], report["failed"], report["skipped"]) == (1, 1, 0)
    failed = next(r for r in report["runs"] if not r["passed"])
    assert any("`attempt` is 2" in line for line in failed["failure"])
    assert report["coverage"][0]["name"] == "request_lifecycle"
    junit = ET.fromstring(cgraph("test", tests, "--format", "junit").stdout)
    failures = junit.findall(".//testcase/failure")
    assert junit.get("failures") == "1" and len(failures) == 1
    assert "`attempt` is 2" in (failures[0].text or "")
    github = cgraph("test", tests, "--format", "github", "--coverage")
    assert github.returncode == 1
    errors = [x for x in github.stdout.splitlines() if x.startswith("::error ")]
    assert len(errors) == 1 and f"file={tests}," in errors[0] and "%0A" in errors[0]
    assert "::warning file=" in github.stdout and "uncovered exit" in github.stdout
    assert github.stdout.endswith("1 passed, 1 failed\n")


def test_the_help_names_what_coverage_counts_and_every_exit_code() -> None:
    done = cgraph("test", "--help")
    words = " ".join(done.stdout.replace("│", " ").split())
    assert "exit 1 on a failure or low coverage, 2 on a file error" in words
    assert "exits and on_error/on_limit routes taken" in words


def test_a_file_error_exits_2_with_a_located_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.test.yaml"
    bad.write_text("cgraph-test: 1\ngraph: nowhere.yaml\ncases:\n  - name: a\n    turnz: []\n")
    done = cgraph("test", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{bad}:5:5 error unknown-key" in done.stdout and "Traceback" not in done.stderr
    assert cgraph("test", str(tmp_path / "missing")).returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    none = cgraph("test", str(empty))
    assert none.returncode == 2 and "no *.test.yaml files" in none.stderr


def test_recorded_exchanges_replay_the_same_tests_offline(tmp_path: Path) -> None:
    source = GRAPHS / "tests" / "research.test.yaml"
    recorded = cgraph("test", str(source), "--record", str(tmp_path / "cassettes"))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassette = tmp_path / "cassettes" / "research.jsonl"
    assert cassette.stat().st_size > 0
    model = "model: replay:cassettes/research.jsonl"
    replayed = source.read_text().replace(
        "graph: ../research.yaml", f"graph: {GRAPHS}/research.yaml\n{model}"
    )
    (tmp_path / "research.test.yaml").write_text(replayed)
    done = cgraph("test", str(tmp_path / "research.test.yaml"))
    assert done.returncode == 0 and done.stdout.endswith("4 passed, 0 failed\n"), done.stdout


def test_the_pre_commit_hook_runs_the_tests_it_is_pointed_at(tmp_path: Path) -> None:
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "cgraph-test")
    assert hook["pass_filenames"] is False and re.search(hook["files"], "graphs/a.test.yaml")
    program, *args = hook["entry"].split()
    assert program == "cgraph"
    shutil.copy(RETRY, tmp_path / "retry.test.yaml")
    (tmp_path / "retry.test.yaml").write_text(
        RETRY.read_text().replace(
            "../request_lifecycle.yaml", str(GRAPHS / "request_lifecycle.yaml")
        )
    )
    assert cgraph(*args, str(tmp_path)).returncode == 0
    failing_retry_file(tmp_path)
    assert cgraph(*args, str(tmp_path)).returncode == 1


def test_lint_checks_test_files_against_their_schema(tmp_path: Path) -> None:
    bad = tmp_path / "bad.test.yaml"
    bad.write_text(
        "cgraph-test: 1\ngraph: g.yaml\ncases:\n  - name: a\n    turns:\n"
        "      - user: hi\n        expect: {stat: x}\n"
    )
    done = cgraph("lint", str(tmp_path))
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    assert f"{bad}:7:18 error unknown-key" in done.stdout and "did you mean `state`?" in done.stdout
    clean = cgraph("lint", "--strict", "graphs/tests")
    files = len(list((GRAPHS / "tests").glob("*.test.yaml")))
    assert clean.returncode == 0 and clean.stdout.endswith(f"in {files} files\n"), clean.stdout
