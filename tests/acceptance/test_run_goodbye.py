"""The turn that ends the conversation is answered: piped, under `--jsonl`, in a terminal.

Offline, the check-in's `end_session` says its goodbye as it is entered; the user's
next message takes its exit to END, and that message gets the goodbye too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pexpect

from tests.commands import CGRAPH, environment, finished
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
MESSAGES = ["hi", "I have to go, bye.", "Bye."]
GOODBYE = "Thank you for checking in today. Take care, and goodbye!"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ENV = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def piped(store: Path, *extra: str) -> list[str]:
    command = [str(CGRAPH), "run", str(CHECKIN), "--store", str(store), *extra]
    return finished(command, MESSAGES, env=ENV).stdout.splitlines()


def test_every_piped_message_gets_a_reply_line(tmp_path: Path) -> None:
    replies = piped(tmp_path)
    assert len(replies) == len(MESSAGES), replies
    assert replies[1:] == [GOODBYE, GOODBYE]


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
    for message in MESSAGES[:2]:
        child.sendline(message)
        child.expect_exact("you › ")
    child.sendline(MESSAGES[2])
    child.expect_exact("the conversation reached END")
    shown = ANSI.sub("", child.before).split("Bye.", 1)[1]  # what answered the last message
    assert f"Ava: {GOODBYE}" in shown.replace("\r\n", " ")
    child.expect_exact("you › ")
    child.sendline("Are you still there?")  # said the same way each time
    child.expect_exact("the conversation reached END — /reset to start again", timeout=60)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
