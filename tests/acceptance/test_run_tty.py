"""`cgraph run` in a real terminal, driven like a person: a check-in, /back, a crash, a resume."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pexpect
import pytest

from tests.commands import CGRAPH, environment
from tests.conftest import GRAPHS
from tests.servers.chat import OPENAI, serve

PROMPT = "you › "
TIMEOUT = 120  # the first turn waits for the embedding model on a busy machine


def _as_from_a_shell() -> None:
    # A person's shell gives the program Ctrl-C. A runner that starts the suite in the
    # background of a script has SIGINT ignored, and an ignored signal survives exec, so
    # Python would never raise KeyboardInterrupt and no Ctrl-C step could be tested.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(store: Path, *extra: str, graph: Path = GRAPHS / "medical_checkin.yaml") -> pexpect.spawn:
    env = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TERM="xterm")
    child = pexpect.spawn(
        str(CGRAPH),
        ["run", str(graph), "--store", str(store), *extra],
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 220),
        preexec_fn=_as_from_a_shell,
    )
    child.expect_exact(PROMPT)
    return child


def test_ctrl_c_during_a_turn_drops_it(tmp_path: Path) -> None:
    # The model server never answers, so Ctrl-C surely lands while the turn waits for it
    # (an offline turn is too quick to interrupt on purpose).
    with serve(OPENAI, stall=True) as server:
        child = spawn(tmp_path, "--model", "openai/local", "--api-base", server.base)
        child.sendline("Good morning to you, Ava.")
        deadline = time.monotonic() + TIMEOUT
        while not server.bodies and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.bodies, "the turn never asked the model"
        child.sendintr()
        child.expect_exact("turn cancelled")
        child.expect_exact(PROMPT)
        say(child, "/history")
        assert "Good morning" not in child.before
        child.sendline("/quit")
        child.expect(pexpect.EOF)


def say(child: pexpect.spawn, text: str, *expected: str) -> None:
    child.sendline(text)
    for fragment in expected:
        child.expect_exact(fragment)
    child.expect_exact(PROMPT)


@pytest.mark.slow
def test_checkin_back_crash_and_resume(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    banner = child.before
    assert "offline semantic mode" in banner and "--model gpt-4o-mini" in banner
    session = re.search(r"session ([0-9a-f]{12})", banner)
    assert session is not None
    say(child, "Hi", "Are you ready to begin?", "welcome_patient")
    say(
        child,
        "Yes, let's start.",
        "heart medications",
        "welcome_patient → medication_adherence_check",
    )
    say(child, "I skipped a dose yesterday.", "When did you miss the dose")
    say(child, "/back", "took back turn 3")
    say(child, "/state", "medication_adherence_check", "objective:")
    say(child, "I took all my pills this morning.", "nitroglycerin", "→ vasodilator_check")
    say(child, "/why", "vasodilator_check", "score", "reason: vasodilator_check at")
    say(child, "/topology", "vasodilator_check   ◀ you are here")

    child.kill(signal.SIGKILL)  # a crash: no goodbye, no cleanup
    child.wait()

    child = spawn(tmp_path, "--session", session.group(1))
    assert "resumed at turn 3" in child.before
    say(child, "/state", "vasodilator_check")
    say(child, "No, I never needed it.", "chest pain, pressure or tightness")
    say(child, "No, none at all.", "short of breath")
    say(child, "No, my breathing is fine.", "cleared for today's session")
    say(child, "Okay, thanks.", "What would you like to ask")
    say(child, "/history", "I took all my pills this morning.")
    assert "I skipped a dose yesterday." not in child.before  # undone before the crash
    say(child, "No questions.", "goodbye")
    say(child, "Bye.", "reached END")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_every_command_and_a_dead_memory_server(tmp_path: Path) -> None:
    child = spawn(tmp_path / "store")
    say(child, "/help", "/memory [query]", "what is remembered", "/sessions")
    say(child, "Hi", "Are you ready to begin?")
    say(child, "I always walk my dog after lunch.", "welcome_patient")
    say(child, "/memory dog", "[personal", "I always walk my dog after lunch.")
    say(child, "/sessions", "◀", "welcome_patient")
    say(child, "/reset", "new session")
    say(child, "/history")
    assert "walk my dog" not in child.before  # a new session, the memory stays
    say(child, "/nonsense", "unknown command /nonsense")
    child.sendline("/quit")
    child.expect_exact("resume with --session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    # A Chroma server that does not answer: a dimmed warning, and the conversation goes on.
    text = (GRAPHS / "medical_checkin.yaml").read_text(encoding="utf-8")
    dead = tmp_path / "dead.yaml"
    dead.write_text(text.replace("memory:\n", "memory:\n  host: 127.0.0.1\n  port: 9\n", 1))
    child = spawn(tmp_path / "store", graph=dead)
    say(child, "Hi", "Are you ready to begin?", "warning: memory is off", "goes on")
    say(child, "Yes, let's start.", "heart medications")
    child.sendintr()  # Ctrl-C at the prompt leaves
    child.expect_exact("resume with --session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_with_a_model_the_reply_is_printed_as_it_streams(tmp_path: Path) -> None:
    import json

    from tests.servers.stream import StreamServer

    reply = "Good to see you. How have you been feeling since your last visit?"
    answer = json.dumps({"exit": "stay", "reason": "greeting", "reply": reply})
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-test")
    graph = tmp_path / "chat.yaml"
    graph.write_text(STREAMED_GRAPH)
    with StreamServer(answer, pieces=20, delay=0.01) as server:
        child = spawn(
            tmp_path / "store",
            "--model",
            "openai/test-model",
            "--api-base",
            server.base,
            graph=graph,
        )
        say(child, "Hello there", reply)
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    assert server.bodies[0].get("stream") is True  # the action's answer (memory extraction is not)
    assert child.before.count(reply) == 0  # printed once, before the prompt: not again


STREAMED_GRAPH = """\
cgraph: 1
name: chat
start: a
states:
  a:
    type: action
    objective: Talk with the user.
    actions: [Ask how they are.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - {description: The user says bye., next_state: END}
"""
