"""The real litellm code path against a local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cgraph.session import Session
from tests.unit.runtime._runtime import action, graph, simple

pytestmark = pytest.mark.slow


class Server:
    """Answers /v1/chat/completions from a queue of (status, content) and records bodies.

    (A timeout is not retried against a server on this machine: see test_providers.py.)"""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.answers: list[tuple[int, str] | tuple[int, str, float]] = []
        """(status, content) or (status, content, seconds to wait first)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                length = int(self.headers.get("content-length", 0))
                server.bodies.append(json.loads(self.rfile.read(length)))
                status, content, *wait = server.answers.pop(0)
                time.sleep(wait[0] if wait else 0)
                payload = completion(content) if status == 200 else {"error": {"message": "boom"}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client timed out and hung up
                    pass

            def log_message(self, *args: Any) -> None:
                return None

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    running = Server()
    yield running
    running.http.shutdown()
    running.http.server_close()


def spec(tmp_path: Path) -> Any:
    return graph(
        tmp_path,
        simple(
            body=action("a", {"b": "The user is ready."})
            + action("b", {"END": "The user says bye."})
        ),
    )


def answer(exit_id: str, reply: str = "") -> tuple[int, str]:
    return 200, json.dumps({"exit": exit_id, "reason": "because", "reply": reply})


def test_a_session_through_litellm_sends_the_enum_and_moves(tmp_path: Path, server: Server) -> None:
    server.answers = [answer("stay", "Hello!"), answer("b"), answer("stay", "Now in b.")]
    session = Session.start(spec(tmp_path), model="openai/test-model", api_base=server.base)
    assert session.send("hi").reply == "Hello!"
    turn = session.send("I am ready")
    assert (turn.state, turn.reply, turn.llm_calls) == ("b", "Now in b.", 2)
    assert turn.transitions[0].reason == "because"
    body = server.bodies[1]
    assert body["model"] == "test-model"
    schema = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and schema["strict"] is True
    assert schema["schema"]["properties"]["exit"]["enum"] == ["b", "stay", "clarify"]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "system"]
    assert body["messages"][0]["content"].startswith("You are Assistant")
    assert body["messages"][3]["content"] == "I am ready"
    assert server.bodies[2]["response_format"]["json_schema"]["schema"]["properties"]["exit"][
        "enum"
    ] == ["END", "stay", "clarify"]


@pytest.mark.parametrize(
    "failure",
    [
        (500, ""),
        (503, ""),
        (429, ""),
    ],
    ids=["500", "503", "429 rate limit"],
)
def test_a_transient_failure_is_retried_then_succeeds(
    tmp_path: Path, server: Server, failure: tuple[int, str] | tuple[int, str, float]
) -> None:
    from cgraph.backends.llm.litellm_chat import LiteLLMModel

    server.answers = [failure, answer("stay", "After a retry.")]
    waits: list[float] = []
    model = LiteLLMModel(
        "openai/test-model", api_base=server.base, retries=2, timeout=30, sleep=waits.append
    )
    turn = Session.start(spec(tmp_path), model=model).send("hi")
    assert turn.reply == "After a retry." and not turn.fallback
    assert len(server.bodies) == 2 and len(waits) == 1 and model.calls == 2
    assert 0.25 <= waits[0] <= 0.5  # backoff 0.5 s with equal jitter: half fixed, half random


def test_an_authentication_error_is_not_retried(tmp_path: Path, server: Server) -> None:
    from cgraph.backends.llm.litellm_chat import LiteLLMModel

    server.answers = [(401, "")]
    model = LiteLLMModel("openai/test-model", api_base=server.base, retries=2, sleep=lambda s: None)
    turn = Session.start(spec(tmp_path), model=model).send("hi")
    assert turn.fallback and len(server.bodies) == 1 and model.calls == 1


def test_a_provider_that_keeps_failing_gives_the_fallback(tmp_path: Path, server: Server) -> None:
    from cgraph.backends.llm.litellm_chat import LiteLLMModel

    server.answers = [(503, "")] * 3
    model = LiteLLMModel("openai/test-model", api_base=server.base, retries=2, sleep=lambda s: None)
    session = Session.start(spec(tmp_path), model=model)
    turn = session.send("hi")
    assert turn.fallback and turn.reply == session.graph.fallback and len(server.bodies) == 3
    assert [e.kind for e in session.events()].count("llm_error") == 1


def test_a_local_server_needs_no_api_key(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.answers = [answer("stay", "No key needed.")]
    turn = Session.start(spec(tmp_path), model="openai/local", api_base=server.base).send("hi")
    assert turn.reply == "No key needed." and not turn.fallback
    assert server.bodies[0]["model"] == "local"


def dead_port() -> int:
    """A port on this machine nobody listens on (bound, then closed)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_dead_server_is_reported_at_once_with_its_url(tmp_path: Path) -> None:
    from cgraph.backends.llm.litellm_chat import LiteLLMModel
    from cgraph.errors import LLMError

    base = f"http://127.0.0.1:{dead_port()}/v1"
    model = LiteLLMModel("openai/test-model", api_base=base, retries=3, sleep=lambda s: None)
    from tests.unit.backends.llm.test_litellm_chat import REQUEST

    model.begin_turn()
    with pytest.raises(LLMError) as failed:
        model.complete(REQUEST)
    assert failed.value.permanent and model.calls == 1  # no retry: nobody will answer
    assert f"cannot reach its server at {base}" in failed.value.message
    assert "connection refused" in failed.value.message
    assert "InternalServerError" not in failed.value.message


def test_cgraph_run_stops_when_the_first_turn_cannot_reach_the_model(tmp_path: Path) -> None:
    import sys

    from tests.commands import environment, ran
    from tests.conftest import GRAPHS

    base = f"http://127.0.0.1:{dead_port()}/v1"
    command = [sys.executable, "-m", "cgraph", "run", str(GRAPHS / "medical_checkin.yaml")]
    command += ["--model", "openai/test-model", "--api-base", base, "--store", str(tmp_path)]
    done = ran(command, ["Hi", "Yes"], env=environment(OPENAI_API_KEY="k"), timeout=120)
    assert done.returncode == 1, done.stderr
    assert f"cannot reach its server at {base}" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("cannot reach") <= 2  # the turn's one failure, not one per retry
