"""The turn that ends the conversation is answered: piped, under `--jsonl`, in a terminal.

Offline, one goodbye ends it: "I have to go, bye." leads the check-in into `end_session`,
whose own exit the same message already takes, so its goodbye is said once and the
session ends. A state's opening line is never said again as the closing: a greeting
state left with "Ok thanks, goodbye" ends with a neutral goodbye.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pexpect

from tests.commands import CGRAPH, environment, finished
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
MESSAGES = ["hi", "I have to go, bye."]
GOODBYE = "Thank you for checking in today. Take care, and goodbye!"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ENV = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def piped(store: Path, *extra: str) -> list[str]:
    command = [str(CGRAPH), "run", str(CHECKIN), "--store", str(store), *extra]
    return finished(command, MESSAGES, env=ENV).stdout.splitlines()


def test_every_piped_message_gets_a_reply_line(tmp_path: Path) -> None:
    replies = piped(tmp_path)
    assert len(replies) == len(MESSAGES), replies
    assert replies[1:] == [GOODBYE]


def test_one_goodbye_ends_the_session(tmp_path: Path) -> None:
    turns = [json.loads(line) for line in piped(tmp_path, "--jsonl")]
    assert [t["completed"] for t in turns] == [False, True]
    assert [t["reply"] for t in turns].count(GOODBYE) == 1


HELLO = """\
cgraph: 1
name: hello
start: greet
states:
  greet:
    type: action
    objective: Greet the user and help them.
    actions: [Greet the user.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    say: Hello! How can I help?
    exit_conditions:
      - description: The user is done and says goodbye.
        next_state: END
        examples: ["Bye.", "Thanks, goodbye.", "That's all for now."]
"""


def test_a_move_into_end_does_not_say_the_opening_line_again(tmp_path: Path) -> None:
    graph = tmp_path / "hello.yaml"
    graph.write_text(HELLO, encoding="utf-8")
    command = [str(CGRAPH), "run", str(graph), "--store", str(tmp_path / "s"), "--jsonl"]
    done = finished(command, ["hi", "Ok thanks, goodbye"], env=ENV)
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert turns[0]["reply"] == "Hello! How can I help?"
    assert turns[1]["completed"] and turns[1]["reply"] == "Goodbye."


def test_the_last_jsonl_turn_is_completed_with_a_reply(tmp_path: Path) -> None:
    turns = [json.loads(line) for line in piped(tmp_path, "--jsonl")]
    assert [t["user"] for t in turns] == MESSAGES
    assert turns[-1]["completed"] and turns[-1]["reply"] == GOODBYE


def test_the_terminal_shows_the_goodbye_before_the_end(tmp_path: Path) -> None:
    child = pexpect.spawn(
        str(CGRAPH),
        ["run", str(CHECKIN), "--store", str(tmp_path)],
        env={**ENV, "TERM": "xterm"},
        encoding="utf-8",
        timeout=300,
        dimensions=(50, 220),
    )
    child.expect_exact("you › ")
    child.sendline(MESSAGES[0])
    child.expect_exact("you › ")
    child.sendline(MESSAGES[1])
    child.expect_exact("the conversation reached END")
    shown = ANSI.sub("", child.before).split("bye.", 1)[1]  # what answered the last message
    assert f"Ava: {GOODBYE}" in shown.replace("\r\n", " ")
    child.expect_exact("you › ")
    child.sendline("Are you still there?")  # said the same way each time
    child.expect_exact("the conversation reached END — /reset to start again", timeout=60)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
