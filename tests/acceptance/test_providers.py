"""Servers that behave like real ones, reached through the real litellm client.

Each test starts a `tests.servers.chat` server on 127.0.0.1 with one known behaviour
(llama-cpp-python's 500 for `json_schema`, forced tools only, the schema inside
`json_object`, a streamed body, a stall) and runs a session against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cgraph.session import Session
from cgraph.spec.model import ModelConfig
from cgraph.wiring.models import resolve_model
from tests.servers.chat import (
    FORCED_TOOLS,
    JSON_OBJECT_SCHEMA,
    LLAMA_CPP_PYTHON,
    LLAMA_CPP_SERVER,
    ONE_SYSTEM,
    OPENAI,
    serve,
)
from tests.unit.runtime._runtime import action, graph, simple, write

pytestmark = pytest.mark.slow
MODEL = "openai/local"
HELLO = {"exit": "stay", "reason": "greeting", "reply": "Hello!"}
TO_B = {"exit": "b", "reason": "ready", "reply": ""}
IN_B = {"exit": "stay", "reason": "in b", "reply": "Now in b."}


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def text(tmp_path: Path) -> str:
    return simple(
        top='memory:\n  store: "off"\n',
        body=action("a", {"b": "The user is ready."}) + action("b", {"END": "Bye."}),
    )


def session(tmp_path: Path, base: str, **settings: Any) -> Session:
    chat = resolve_model(MODEL, ModelConfig(), api_base=base, **settings)
    return Session.start(graph(tmp_path, text(tmp_path)), model=chat)


def modes(bodies: list[dict[str, Any]]) -> list[str]:
    """How each request carried the schema."""
    found = []
    for body in bodies:
        fmt = body.get("response_format") or {}
        found.append("tool" if body.get("tools") else fmt.get("type", "none"))
    return found


def test_llama_cpp_python_refuses_json_schema_so_auto_moves_to_a_forced_tool(
    tmp_path: Path,
) -> None:
    with serve(LLAMA_CPP_PYTHON, answers=[HELLO, TO_B, IN_B]) as server:
        talk = session(tmp_path, server.base)
        first = talk.send("hi")
        second = talk.send("I am ready")
    assert (first.reply, first.fallback) == ("Hello!", False)
    assert (second.state, second.reply) == ("b", "Now in b.")
    assert modes(server.bodies) == ["json_schema", "tool", "tool", "tool"]
    assert server.bodies[1]["tool_choice"] == {
        "type": "function",
        "function": {"name": "cgraph_action"},
    }
    said = [w for w in first.warnings if "refused `json_schema`" in w]
    assert said == [
        "the server refused `json_schema` structured output (response_format.type: Input "
        "should be 'text' or 'json_object' (got 'json_schema')); using `tool` for the rest "
        "of the session"
    ]
    assert not second.warnings  # said once


def test_a_server_of_forced_tools_only(tmp_path: Path) -> None:
    with serve(FORCED_TOOLS, answers=[HELLO]) as server:
        turn = session(tmp_path, server.base).send("hi")
    assert turn.reply == "Hello!" and modes(server.bodies) == ["json_schema", "tool"]


def test_a_server_that_needs_the_schema_inside_json_object(tmp_path: Path) -> None:
    with serve(JSON_OBJECT_SCHEMA, answers=[HELLO]) as server:
        turn = session(tmp_path, server.base).send("hi")
    assert turn.reply == "Hello!" and not turn.fallback
    assert modes(server.bodies) == ["json_schema", "tool", "json_object"]
    last = server.bodies[-1]
    enum = ["b", "stay", "clarify"]
    assert last["response_format"]["schema"]["properties"]["exit"]["enum"] == enum
    assert '"enum":["b","stay","clarify"]' in last["messages"][-1]["content"]  # and in the prompt
    assert len([w for w in turn.warnings if "structured output" in w]) == 2


def test_json_object_without_the_schema_gets_json_of_any_shape() -> None:
    with serve(JSON_OBJECT_SCHEMA) as server:
        chat_args = {"messages": [{"role": "user", "content": "hi"}]}
        server.reply({**chat_args, "response_format": {"type": "json_object"}})
        answer = server.reply({**chat_args, "response_format": {"type": "json_object"}})
    assert json.loads(answer["choices"][0]["message"]["content"]) == {
        "name": "",
        "description": "",
    }


def test_openai_keeps_json_schema(tmp_path: Path) -> None:
    with serve(OPENAI, answers=[HELLO]) as server:
        turn = session(tmp_path, server.base).send("hi")
    assert turn.reply == "Hello!" and modes(server.bodies) == ["json_schema"]
    assert not turn.warnings


def test_a_chat_template_that_allows_one_system_message(tmp_path: Path) -> None:
    with serve(ONE_SYSTEM, answers=[HELLO, HELLO]) as server:
        turn = session(tmp_path, server.base).send("hi")
    roles = [[m["role"] for m in body["messages"]] for body in server.bodies]
    assert roles[0].count("system") == 2 and roles[1] == ["system", "user"]
    assert turn.reply == "Hello!" and any("leading system message" in w for w in turn.warnings)
    with serve(ONE_SYSTEM, answers=[HELLO]) as server:
        assert session(tmp_path, server.base, one_system=True).send("hi").reply == "Hello!"
    assert len(server.bodies) == 1


def test_a_streamed_body_within_the_deadline_is_read(tmp_path: Path) -> None:
    with serve(OPENAI, answers=[HELLO], trickle=0.02) as server:
        turn = session(tmp_path, server.base, timeout=20.0).send("hi")
    assert turn.reply == "Hello!" and not turn.fallback


def test_a_stream_slower_than_the_deadline_ends_the_turn_with_the_fallback(
    tmp_path: Path,
) -> None:
    with serve(OPENAI, answers=[HELLO], trickle=1.0) as server:
        talk = session(tmp_path, server.base, timeout=8.0)
        started = time.monotonic()
        turn = talk.send("hi")
        waited = time.monotonic() - started
    assert turn.fallback and "no answer within" in turn.warnings[0]
    assert len(server.bodies) == 1  # a local server still busy is not asked again
    assert waited < 25  # the body takes 30 s, each read well within the per-read timeout


def test_a_stalled_local_server_is_not_asked_again(tmp_path: Path) -> None:
    with serve(OPENAI, stall=True) as server:
        turn = session(tmp_path, server.base, timeout=8.0, retries=3).send("hi")
    assert turn.fallback and len(server.bodies) == 1


# ----- the command line ---------------------------------------------------------------------


def run(*args: str, stdin: str = "hi\n") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    # A generous deadline: the machine running the tests may be busy; the server is not.
    command = [sys.executable, "-m", "cgraph", "run", "--timeout", "300", *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=600, env=env
    )


def test_a_refused_explicit_mode_stops_the_run_with_its_cause(tmp_path: Path) -> None:
    path = write(tmp_path, text(tmp_path))
    with serve(LLAMA_CPP_PYTHON) as server:
        done = run(
            str(path),
            "--model",
            MODEL,
            "--api-base",
            server.base,
            "--structured",
            "json_schema",
            "--store",
            str(tmp_path / "s"),
        )
    assert done.returncode == 1, done.stderr
    assert "error: model `openai/local` failed: response_format.type: Input should be" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr and len(server.bodies) == 1


def test_a_missing_key_stops_the_run_before_the_first_turn(tmp_path: Path) -> None:
    path = write(tmp_path, text(tmp_path))
    done = run(str(path), "--model", "gpt-4o-mini", "--store", str(tmp_path / "s"))
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "error: model `gpt-4o-mini` needs an API key: set OPENAI_API_KEY (or pass --api-base)"
    )


def test_jsonl_marks_a_fallback_and_carries_the_warnings(tmp_path: Path) -> None:
    path = write(tmp_path, text(tmp_path))
    with serve(LLAMA_CPP_PYTHON, answers=[HELLO], overloaded_from=2) as server:
        done = run(
            str(path),
            "--model",
            MODEL,
            "--api-base",
            server.base,
            "--jsonl",
            "--retries",
            "0",
            "--store",
            str(tmp_path / "s"),
            stdin="hi\nagain\n",
        )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    assert [line["fallback"] for line in lines] == [False, True]
    assert [len(line["warnings"]) for line in lines] == [1, 1]
    assert "refused `json_schema`" in lines[0]["warnings"][0]
    assert "the server is overloaded" in lines[1]["warnings"][0]
    assert done.stderr.count("refused `json_schema`") == 1


def test_recording_keeps_the_switch_to_another_mode_said_and_logged(tmp_path: Path) -> None:
    from cgraph.backends.llm.replay import RecordingModel

    with serve(LLAMA_CPP_PYTHON, answers=[HELLO]) as server:
        chat = resolve_model(MODEL, ModelConfig(), api_base=server.base)
        recorded = RecordingModel(chat, tmp_path / "run.jsonl")
        talk = Session.start(graph(tmp_path, text(tmp_path)), model=recorded)
        turn = talk.send("hi")
    assert turn.reply == "Hello!" and modes(server.bodies) == ["json_schema", "tool"]
    assert any("refused `json_schema`" in w for w in turn.warnings)
    notices = [e.data["notice"] for e in talk.events() if e.kind == "llm_notice"]
    assert len(notices) == 1 and "using `tool` for the rest of the session" in notices[0]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_answer_cut_at_max_tokens_says_so_and_names_the_cap(
    tmp_path: Path, stream: bool
) -> None:
    long = {"exit": "stay", "reason": "long", "reply": "A rather long reply. " * 20}
    with serve(OPENAI, answers=[long, long]) as server:
        chat = resolve_model(MODEL, ModelConfig(), api_base=server.base, max_tokens=20)
        talk = Session.start(graph(tmp_path, text(tmp_path)), model=chat)
        turn = talk.send("hi") if not stream else [*talk.stream("hi")][-1]
    assert turn.fallback  # type: ignore[union-attr]
    (warning,) = turn.warnings  # type: ignore[union-attr]
    assert "stopped at its cap of 20 tokens before its answer was complete" in warning
    assert "--max-tokens" in warning and "not valid JSON" not in warning
    assert len(server.bodies) == 1  # the same cap would cut the same answer again


def test_auto_keeps_json_schema_on_llama_cpps_own_server(tmp_path: Path) -> None:
    with serve(LLAMA_CPP_SERVER, answers=[HELLO, TO_B, IN_B]) as server:
        talk = session(tmp_path, server.base)
        first, second = talk.send("hi"), talk.send("I am ready")
    assert (first.reply, second.reply) == ("Hello!", "Now in b.")
    assert modes(server.bodies) == ["json_schema"] * 3 and not first.warnings


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_forced_tool_that_the_server_ignores_is_said_once_with_what_to_use(
    tmp_path: Path, stream: bool
) -> None:
    with serve(LLAMA_CPP_SERVER) as server:
        talk = session(tmp_path, server.base, structured="tool")
        ask = (lambda text: [*talk.stream(text)][-1]) if stream else talk.send
        first, second = ask("hi"), ask("again")
    assert first.fallback and second.fallback  # prose is no answer
    said = [w for w in (*first.warnings, *second.warnings) if "forced tool call" in w]
    assert said == [
        "the server took a forced tool call (`--structured tool`) and answered in prose "
        "instead, so its answers cannot be read; use `--structured json_schema` (or `auto`)"
    ]
    notices = [e for e in talk.events() if e.kind == "llm_notice"]
    assert len(notices) == 1


def test_auto_leaves_a_forced_tool_the_server_ignores_for_the_next_mode(tmp_path: Path) -> None:
    from tests.servers.chat import Behaviour

    ignoring = Behaviour(
        "ignores forced tools, refuses json_schema", json_schema=False, ignores_forced_tools=True
    )
    with serve(ignoring, answers=[HELLO]) as server:
        turn = session(tmp_path, server.base).send("hi")
    assert turn.reply == "Hello!" and not turn.fallback
    assert modes(server.bodies) == ["json_schema", "tool", "json_object"]
    assert any("answered in prose" in w and "using `json_object`" in w for w in turn.warnings)
