"""`cgraph run graphs/companion.yaml` against a local model server that streams, in a real
terminal: the reply is on the screen while the server is still writing it, and the turn
is committed once it is whole."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.acceptance.test_litellm_stream import answer, tool_graph
from tests.acceptance.test_run_tty import PROMPT, say, spawn
from tests.conftest import GRAPHS
from tests.servers.chat import OPENAI, Calls, serve

pytestmark = pytest.mark.slow
REPLY = (
    "Finishing a chapter is a real milestone, and you can be proud of it. "
    "What would make the next chapter feel doable this week?"
)
ANSWERS = {
    "cgraph_start": {"exit": "receive_input", "reason": "a new user"},
    "cgraph_action": {"exit": "stay", "reason": "the user shared progress", "reply": REPLY},
}
HEAD, TAIL = REPLY[:30], REPLY[-30:]
PREFIX = len('{"exit": "stay", "reason": "the user shared progress", "reply": "')


def test_the_companion_streams_its_reply_and_commits_the_turn(tmp_path: Path) -> None:
    # The server stops once half the reply is written: what is on the screen by then came
    # in pieces, before the turn could end.
    half = (PREFIX + len(REPLY) // 2) // 4
    with serve(OPENAI, by_schema=ANSWERS, piece=4, pause=0.005, hold_after=half) as server:
        child = spawn(
            tmp_path / "store",
            *("--model", "openai/local", "--api-base", server.base),
            graph=GRAPHS / "companion.yaml",
        )
        child.sendline("I finished the first chapter of my novel!")
        child.expect_exact(HEAD)
        with pytest.raises(pexpect.TIMEOUT):
            child.expect_exact(TAIL, timeout=2)
        assert not server.go.is_set()
        server.go.set()
        child.expect_exact(TAIL)
        child.expect_exact(PROMPT)
        assert HEAD not in child.before  # printed once, as it streamed: not again at the end
        say(child, "/history", "I finished the first chapter", TAIL)  # committed
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    kinds = [
        (b.get("response_format") or {}).get("json_schema", {}).get("name") for b in server.bodies
    ]
    streamed = [kind for kind, body in zip(kinds, server.bodies, strict=True) if body.get("stream")]
    assert kinds[:4] == ["cgraph_start", "cgraph_decision", "cgraph_reflection", "cgraph_action"]
    assert streamed == ["cgraph_action"]  # decisions, reflections and extraction are asked whole


def test_a_tool_turn_streams_and_a_rejected_answer_is_announced(tmp_path: Path) -> None:
    wrong = answer("Next Tuesday it is: the docs folder holds 3 files.", day="next tuesday")
    right = answer("The docs folder holds 3 files. Which day do you mean, as a date?")
    scripted = [Calls((("count_files", {"folder": "docs"}),)), wrong, right]
    with serve(OPENAI, answers=scripted, piece=4, pause=0.005) as server:
        child = spawn(
            tmp_path / "store",
            *("--model", "openai/local", "--api-base", server.base),
            graph=tool_graph(tmp_path),
        )
        child.sendline("How many files are in docs, for next tuesday?")
        child.expect_exact(wrong["reply"])
        child.expect_exact("that answer was rejected; asking the model again")
        child.expect_exact(right["reply"])
        child.expect_exact(PROMPT)
        say(child, "/why", "count_files")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    assert [body["stream"] for body in server.bodies] == [True, True, True]


SLOW_TOOLS = """
import time


def count_files(folder: str, idempotency_key: str = "") -> dict:
    time.sleep(1.5)
    return {"folder": folder, "count": 3}
"""


def test_while_a_tool_runs_a_status_line_names_it(tmp_path: Path) -> None:
    graph = tool_graph(tmp_path)
    (tmp_path / "agent_tools.py").write_text(SLOW_TOOLS)
    reply = answer("The docs folder holds 3 files.")
    scripted = [Calls((("count_files", {"folder": "docs"}),)), reply]
    with serve(OPENAI, answers=scripted, piece=4, pause=0.005) as server:
        child = spawn(
            tmp_path / "store",
            *("--model", "openai/local", "--api-base", server.base),
            graph=graph,
        )
        child.sendline("How many files are in docs?")
        child.expect_exact("(calling count_files…)")
        child.expect_exact(reply["reply"])
        child.expect_exact(PROMPT)
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    assert len(server.bodies) == 2
