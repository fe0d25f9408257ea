"""`cgraph lint` and `cgraph topology` through the real console script, in a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.commands import CGRAPH, ran
from tests.conftest import FIXTURES, GRAPHS, ROOT

CORPUS = FIXTURES / "corpora" / "yaml-test-suite"
LINT = FIXTURES / "lint"
LINE = re.compile(
    r"^(?P<file>[^\s].*?):(?P<line>\d+):(?P<col>\d+) (?P<sev>error|warning) "
    r"(?P<code>[a-z0-9-]+) (?P<msg>.+)$"
)
SERVING = ("starlette", "uvicorn", "psycopg", "psycopg_pool", "httpx", "anyio")
"""What only `cgraph serve` and a PostgreSQL store import."""
HEAVY = ("litellm", "chromadb", "torch", "sentence_transformers", *SERVING)
LEAN = ("rich", "jsonschema", "pydantic", *HEAVY)
"""Modules `cgraph lint` must not import."""


def cgraph(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args], cwd=cwd)


def test_clean_graphs_exit_0_with_a_summary() -> None:
    done = cgraph("lint", "--strict", "graphs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"0 errors, 0 warnings in \d+ files\n", done.stdout)
    assert done.stderr == ""


def test_problems_exit_1_with_located_lines_and_hints() -> None:
    done = cgraph("lint", str(LINT / "unknown_state.yaml"))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    first = LINE.match(lines[0])
    assert first is not None
    assert (first["line"], first["col"], first["code"]) == ("3", "8", "unknown-state")
    assert lines[1] == (
        "  hint: did you mean `welcome`? use a state id from `states:`, `END`, or `RESUME` "
        "(after a `resume: true` exit)"
    )
    assert lines[-1] == "5 errors, 0 warnings in 1 file"


def test_warnings_pass_unless_strict() -> None:
    path = str(LINT / "same_target.yaml")
    assert cgraph("lint", path).returncode == 0
    strict = cgraph("lint", "--strict", path)
    assert strict.returncode == 1
    assert strict.stdout.endswith("(--strict: warnings fail)\n")


def test_usage_errors_and_missing_paths_exit_2(tmp_path: Path) -> None:
    assert cgraph("lint").returncode == 2
    assert cgraph("lint", "--format", "xml", "graphs").returncode == 2
    assert cgraph("lint", "--no-such-option", "graphs").returncode == 2
    missing = cgraph("lint", "graphs", "no/such/file.yaml")
    assert missing.returncode == 2
    assert "error: no/such/file.yaml: no such file or folder" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "link.yaml").symlink_to(tmp_path / "gone.yaml")
    dangling = cgraph("lint", "--format", "json", str(tmp_path / "link.yaml"))
    assert dangling.returncode == 2
    (item,) = json.loads(dangling.stdout)
    assert item["code"] == "unreadable" and item["hint"]
    assert "Traceback" not in dangling.stderr


def test_json_format() -> None:
    done = cgraph("lint", "--format", "json", str(LINT / "tools.yaml"))
    assert done.returncode == 1
    items = json.loads(done.stdout)
    assert {tuple(sorted(i)) for i in items} == {
        ("code", "column", "file", "hint", "line", "message", "severity")
    }
    assert [i["code"] for i in items][:2] == ["duplicate-tool", "unused-tool"]


def test_github_format() -> None:
    done = cgraph("lint", "-f", "github", str(LINT / "memory_off.yaml"))
    assert done.returncode == 0
    assert done.stdout.startswith(
        f"::warning file={LINT / 'memory_off.yaml'},line=15,col=5,title=cgraph memory-off::"
    )


def test_sarif_format() -> None:
    done = cgraph("lint", "--format", "sarif", str(LINT / "topology.yaml"))
    assert done.returncode == 1
    log = json.loads(done.stdout)
    assert log["version"] == "2.1.0"
    rules = {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert "topology-type" in rules
    assert len(log["runs"][0]["results"]) == 8


def test_folder_walk_lints_graphs_and_skips_other_yaml_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "g.yml").write_text((LINT / "unreachable.yaml").read_text())
    (tmp_path / "workflow.yaml").write_text("name: ci\non: push\n")
    done = cgraph("lint", str(tmp_path))
    assert done.returncode == 1
    assert "nested/g.yml:14:3 error unreachable-state" in done.stdout
    assert f"note: {tmp_path / 'workflow.yaml'}: skipped, no top-level `cgraph:` key" in done.stderr


def test_every_yaml_test_suite_document_gets_clean_diagnostics() -> None:
    # The corpus ships in the repository's fixtures: absent is a failure.
    files = sorted(str(p) for p in CORPUS.rglob("*.yaml"))
    assert len(files) > 300, f"the YAML test-suite corpus is missing under {CORPUS}"
    done = cgraph("lint", "--format", "json", *files)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stderr == ""
    items = json.loads(done.stdout)
    assert {i["file"] for i in items} == set(files)  # every one is a problem for a graph linter
    for item in items:
        assert item["line"] >= 1 and item["column"] >= 1, item
        assert item["message"] and item["hint"] and "\n" not in item["message"], item
    errors = {p for p in files if "/error/" in p}
    syntax = {i["file"] for i in items if i["code"] in ("yaml-syntax", "tab-indent")}
    assert len(syntax & errors) >= len(errors) * 0.8


def test_topology_prints_the_derived_map_and_checks_the_authored_one() -> None:
    done = cgraph("topology", "graphs/request_lifecycle.yaml")
    assert done.returncode == 0
    handoff = "ANY(The user asks to talk to a human, a person from the support team.)"
    assert done.stdout.startswith(f"START -> [A] idle\n{handoff} -> [N] handoff\n\n[A] idle\n")
    assert cgraph("topology", "--check", "graphs/request_lifecycle.yaml").returncode == 0
    bad = cgraph("topology", "--check", str(LINT / "topology.yaml"))
    assert bad.returncode == 1
    assert "topology-type" in bad.stderr
    assert cgraph("topology", "nowhere.yaml").returncode == 2
    folder = cgraph("topology", "graphs")
    assert (folder.returncode, folder.stderr) == (
        2,
        "error: graphs: is a folder; name one graph file\n",
    )


def imported(runs: list[list[str]], watched: tuple[str, ...]) -> list[str]:
    """Which of `watched` a fresh interpreter has imported after these cgraph commands."""
    probe = (
        "import json, sys\n"
        "from cgraph.cli.app import app\n"
        f"for args in {runs!r}:\n"
        "    try:\n"
        "        app(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_help_and_lint_never_import_heavy_packages() -> None:
    runs = [["--help"], ["lint", "graphs"], ["topology", "graphs/assistant.yaml"]]
    assert imported(runs, HEAVY) == []


def test_lint_alone_imports_neither_rich_nor_jsonschema_nor_pydantic() -> None:
    # Cold start: typer's help machinery (rich) and other validators are not needed to lint;
    # pydantic alone would double the start (typer 0.29 imports it, hence the pin below 0.29).
    assert imported([["lint", "--format", "sarif", "graphs"]], LEAN) == []


def test_the_pre_commit_hook_entry_runs(tmp_path: Path) -> None:
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "cgraph-lint")
    assert hook["language"] == "python"
    assert re.search(hook["files"], "graphs/companion.yaml")
    (tmp_path / "ci.yml").write_text("on: push\n")
    program, *args = hook["entry"].split()
    assert program == "cgraph"
    done = cgraph(*args, str(tmp_path / "ci.yml"), str(GRAPHS / "companion.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    broken = cgraph(*args, str(LINT / "same_target.yaml"))
    assert broken.returncode == 1


def test_schema_prints_the_shipped_json_schema() -> None:
    done = cgraph("schema")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == (ROOT / "schemas" / "context-graph.schema.json").read_text()
    assert json.loads(done.stdout)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_topology_draws_mermaid() -> None:
    result = cgraph("topology", str(GRAPHS / "medical_checkin.yaml"), "--mermaid")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("flowchart TD\n")
    assert '-->|"The patient is ready to proceed with the check-in."|' in result.stdout


def test_deep_nesting_and_long_numbers_are_located_never_a_crash(tmp_path: Path) -> None:
    # PyYAML's C parser recurses once per level and crashed the process (signal 11)
    # past ~30,000 levels; Python refuses integers over 4,300 digits with a ValueError.
    cases = {
        "flow.yaml": "cgraph: 1\nvariables:\n  v: " + "[" * 40_000 + "]" * 40_000 + "\n",
        "block.yaml": "cgraph: 1\nvariables:\n  v:\n" + "- " * 40_000 + "x\n",
        "digits.yaml": "cgraph: 1\nvariables:\n  v: " + "7" * 5_000 + "\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = cgraph("lint", "--format", "json", *sorted(cases), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    found = {(i["file"], i["code"]) for i in json.loads(done.stdout)}
    assert {(name, "value-too-large") for name in cases} <= found
