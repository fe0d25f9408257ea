"""`cgraph run --timeout` against local servers that never finish their answer: in a
terminal (the answer streams, a word every 0.3 s, forever) and under `--jsonl` (the
body trickles in). The turn ends soon after its deadline with the fallback reply, the
half-shown answer withdrawn, the turn committed, and no traceback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pexpect
import pytest

from tests.acceptance.test_run_tty import PROMPT, say, spawn
from tests.commands import environment, start_run
from tests.servers.chat import OPENAI, serve

pytestmark = pytest.mark.slow
DEADLINE = 1.5
MARGIN = 2.0
"""What a turn may take past its deadline: the fallback, the commit, a busy machine."""
FALLBACK = "The line is slow today; please say that again."
GRAPH = f"""\
cgraph: 1
name: chat
start: a
fallback: "{FALLBACK}"
memory: {{store: "off"}}
states:
  a:
    type: action
    objective: Talk with the user.
    actions: [Ask how they are.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - {{description: The user says bye., next_state: END}}
"""


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    path = tmp_path / "chat.yaml"
    path.write_text(GRAPH)
    return path


def test_in_a_terminal_a_dripping_answer_is_withdrawn_at_the_deadline(
    tmp_path: Path, graph: Path
) -> None:
    with serve(OPENAI, drip=0.3) as server:
        child = spawn(
            tmp_path / "store",
            *("--model", "openai/local", "--api-base", server.base),
            *("--timeout", str(DEADLINE)),
            graph=graph,
        )
        child.sendline("Hello there")
        child.expect_exact("Let me think and think")
        shown = time.monotonic()  # the deadline began before the request: it is nearer
        child.expect_exact("the model failed before finishing that answer; it is withdrawn")
        child.expect_exact(FALLBACK)
        took = time.monotonic() - shown
        child.expect_exact(PROMPT)
        say(child, "/history", "Hello there", FALLBACK)  # committed: the fallback, not a half
        assert "think" not in child.before
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    assert took < DEADLINE + MARGIN, f"the half answer stood {took:.1f} s"
    assert "Traceback" not in child.before
    assert [body.get("stream") for body in server.bodies] == [True]  # never asked again


def test_under_jsonl_a_trickling_answer_ends_at_the_deadline(tmp_path: Path, graph: Path) -> None:
    options = ["--store", str(tmp_path / "store")]
    options += ["--model", "openai/local", "--timeout", str(DEADLINE)]
    with serve(OPENAI, trickle=0.3) as server:
        child = start_run(
            graph, *options, "--api-base", server.base, env=environment(HF_HUB_OFFLINE="1")
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("hi\nhello again\n")
        child.stdin.close()
        first = json.loads(child.stdout.readline())
        started = time.monotonic()  # the second turn pays no first call's imports
        second = json.loads(child.stdout.readline())
        took = time.monotonic() - started
        child.wait(30)
        errors = child.stderr.read() if child.stderr else ""
    assert took < DEADLINE + MARGIN, f"the second turn took {took:.1f} s"
    for turn in (first, second):
        assert turn["fallback"] and turn["reply"] == FALLBACK
        assert any("no answer within" in w for w in turn["warnings"]), turn["warnings"]
    assert second["turn"] == 2 and child.returncode == 0, errors
    assert "Traceback" not in errors
    assert len(server.bodies) == 2  # a local server still busy is not asked again
