"""Model tool calls through the real litellm, against a local OpenAI-compatible server.

The server checks what a real one checks of a tool conversation: every `tool` message
answers a call the assistant made just before, offered functions are well formed, and
`tool_choice` names no function that is not offered.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cgraph.session import Session
from tests.servers.chat import LLAMA_CPP_PYTHON, Calls, serve
from tests.unit.runtime.tools.test_calls import tool_graph

pytestmark = pytest.mark.slow


def problem(body: dict[str, Any]) -> str | None:
    """Why a real OpenAI-compatible server would refuse this body (400), or None."""
    for tool in body.get("tools", []):
        function = tool.get("function", {})
        if tool.get("type") != "function" or not function.get("name"):
            return "tools[].function.name is required"
        if not isinstance(function.get("parameters", {}), dict):
            return "tools[].function.parameters must be an object"
    pending: set[str] = set()
    for message in body["messages"]:
        if message["role"] == "assistant":
            pending = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool" and message.get("tool_call_id") not in pending:
            return "a tool message must answer a preceding tool call"
    return None


class ToolServer:
    """Answers chat completions from a queue: text content, or a list of tool calls."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.answers: list[str | list[tuple[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                server.bodies.append(body)
                refused = problem(body)
                if refused:
                    self._send(400, {"error": {"message": refused, "type": "invalid_request"}})
                    return
                self._send(200, completion(server.answers.pop(0)))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


def completion(answer: str | list[tuple[str, str]]) -> dict[str, Any]:
    if isinstance(answer, str):
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        finish = "stop"
    else:
        calls = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(answer)
        ]
        message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    running = ToolServer()
    yield running
    running.http.shutdown()
    running.http.server_close()


def reply(text: str) -> str:
    return json.dumps({"exit": "stay", "reason": "answered", "reply": text})


def start(tmp_path: Path, server: ToolServer, max_calls: int = 4) -> Session:
    return Session.start(
        tool_graph(tmp_path, max_calls), model="openai/test-model", api_base=server.base
    )


def test_a_call_with_bad_arguments_gets_the_error_then_the_model_answers(
    tmp_path: Path, server: ToolServer
) -> None:
    server.answers = [[("count_files", '{"path": "docs"}')], reply("Which folder?")]
    turn = start(tmp_path, server).send("count the files")
    assert turn.reply == "Which folder?"
    assert [c["status"] for c in turn.tool_calls] == ["refused"]
    first, second = server.bodies
    assert [t["function"]["name"] for t in first["tools"]] == ["count_files", "slow"]
    assert first["response_format"]["type"] == "json_schema"
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "count_files"
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_0"
    assert "'folder' is a required property" in json.loads(tool["content"])["error"]


def test_a_tool_that_times_out_is_answered_to_the_user(tmp_path: Path, server: ToolServer) -> None:
    server.answers = [[("slow", '{"seconds": 3}')], reply("That took too long, sorry.")]
    turn = start(tmp_path, server).send("run the slow tool")
    assert turn.reply == "That took too long, sorry." and not turn.fallback
    [failed] = turn.tool_calls
    assert failed["status"] == "failed" and "timed out" in failed["error"]


def test_a_call_of_an_undeclared_tool_is_refused(tmp_path: Path, server: ToolServer) -> None:
    server.answers = [[("rm_rf", "{}")], reply("I cannot remove files.")]
    turn = start(tmp_path, server).send("remove everything")
    assert turn.reply == "I cannot remove files."
    assert turn.tool_calls[0]["error"].startswith("there is no tool `rm_rf` here")


def test_a_model_that_loops_on_tool_calls_is_stopped_and_answers(
    tmp_path: Path, server: ToolServer
) -> None:
    loop = [("count_files", '{"folder": "docs"}')]
    server.answers = [loop, loop, loop, reply("There are 3 files.")]
    turn = start(tmp_path, server, max_calls=2).send("count, count, count")
    assert turn.reply == "There are 3 files."
    assert [c["status"] for c in turn.tool_calls] == ["done", "done"]
    assert "tools" in server.bodies[1] and "tools" not in server.bodies[2]
    # Offered no tools, the model still called one: that is no answer; re-asked, it answers.
    assert len(server.bodies) == 4 and any("rejected" in w or "model" in w for w in turn.warnings)


def test_a_tool_round_reaches_a_llama_cpp_python_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its request model refuses a tool-calling assistant message with null content (500),
    # and its chat template one without the key (litellm drops a null): "" is sent.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    answers = [
        Calls((("count_files", {"folder": "docs"}),)),
        {"exit": "stay", "reason": "r", "reply": "Three."},
    ]
    with serve(LLAMA_CPP_PYTHON, answers=answers) as fake:
        session = Session.start(tool_graph(tmp_path), model="openai/local", api_base=fake.base)
        turn = session.send("count the files in docs")
    assert turn.reply == "Three." and [c["status"] for c in turn.tool_calls] == ["done"]
    assert not turn.fallback and not any("content" in w for w in turn.warnings), turn.warnings
    caller = next(m for m in fake.bodies[-1]["messages"] if m.get("tool_calls"))
    assert caller["content"] == ""
