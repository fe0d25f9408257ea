"""What `cgraph lint` and `cgraph test` print quotes a graph's values and a model's
replies: control characters in them are written escaped, never raw (an ESC sequence
would set the terminal's title and clear its screen), and the JSON formats stay JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.commands import CGRAPH, ran

RAW = "\x1b\x07\x9b\u202e"
HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\x9b\u202e"
# YAML's double-quoted escapes: the file itself is plain text
IN_YAML = r"x\e]0;pwned\a\e[2J\x9b\u202e"

GRAPH = f"""cgraph: 1
name: cc
start: a
states:
  a:
    type: action
    objective: Greet.
    say: "Hello {IN_YAML}"
    actions: [Greet.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - next_state: END
        description: The user says goodbye.
"""
BROKEN = GRAPH.replace("next_state: END", f'next_state: "{IN_YAML}"')
TEST = f"""cgraph-test: 1
graph: g.yaml
cases:
  - name: "the greeting {IN_YAML}"
    turns:
      - user: hello
        expect: {{reply_contains: "nothing like it"}}
"""


def texts(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from texts(item)


@pytest.mark.parametrize("form", ["text", "json", "github", "sarif"])
def test_lint_escapes_a_graphs_control_characters(tmp_path: Path, form: str) -> None:
    (tmp_path / "g.yaml").write_text(BROKEN)
    done = ran([str(CGRAPH), "lint", "-f", form, "g.yaml"], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert not any(c in done.stdout + done.stderr for c in RAW)
    if form in ("json", "sarif"):
        assert any(HOSTILE in text for text in texts(json.loads(done.stdout)))
    else:
        assert "x\\x1b]0;pwned\\x07\\x1b[2J\\x9b\\u202e" in done.stdout


@pytest.mark.parametrize("form", ["text", "json", "junit", "github"])
def test_cgraph_test_escapes_replies_and_names(tmp_path: Path, form: str) -> None:
    (tmp_path / "g.yaml").write_text(GRAPH)
    (tmp_path / "g.test.yaml").write_text(TEST)
    done = ran([str(CGRAPH), "test", "--format", form, "g.test.yaml"], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert not any(c in done.stdout + done.stderr for c in RAW), done.stdout
    if form == "json":
        assert any(HOSTILE in text for text in texts(json.loads(done.stdout)))
    else:
        assert "\\x1b" in done.stdout
