"""A graph with a YAML syntax error: `cgraph lint` and `cgraph run` say where and what."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.commands import CGRAPH, ran

HEADER = "cgraph: 1\nname: broken\nstart: ask\nstates:\n  ask:\n    type: action\n"
BROKEN = {
    # name: (the rest of the file, line:col of the fix, words of the message, of the hint)
    "tab": ("\tobjective: Ask.\n", "7:1", "tab character in indentation", "spaces only"),
    "indent": ("   objective: Ask.\n", "7:4", "lines up with no key", "indent it exactly"),
    "quote": ('    objective: "Ask.\n    say: hi\n', "7:16", "never closed", "quote"),
    "bracket": ("    actions: [Ask, Wait\n    say: hi\n", "7:14", "`[` list", "`]`"),
}


def cgraph(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args], cwd=cwd, timeout=120)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_lint_and_run_point_at_the_fix_with_a_hint(name: str, tmp_path: Path) -> None:
    rest, where, said, hint = BROKEN[name]
    (tmp_path / "g.yaml").write_text(HEADER + rest, encoding="utf-8")
    for command in ("lint", "run"):
        done = cgraph(command, "g.yaml", cwd=tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode == 1, output
        first = next(line for line in output.splitlines() if line.startswith("g.yaml:7"))
        assert first.startswith(f"g.yaml:{where} error "), output
        assert said in first and "hint: " in output and hint in output, output
        assert "Traceback" not in output
