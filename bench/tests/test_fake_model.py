"""The serving bench's slow model server (bench/fake_model.py), asked by the real openai
client over real HTTP: valid answers in every mode, OpenAI's refusals, calls held at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import openai
import pytest

from tests.serving import free_port

FAKE = Path(__file__).resolve().parent.parent / "fake_model.py"
SCHEMA = {
    "type": "object",
    "properties": {
        "exit": {"type": "string", "enum": ["bye", "stay"]},
        "reason": {"type": "string", "minLength": 1},
        "reply": {"type": "string"},
        "slots": {"$ref": "#/$defs/slots"},
    },
    "required": ["exit", "reason", "reply", "slots"],
    "additionalProperties": False,
    "$defs": {
        "slots": {
            "type": "object",
            "properties": {
                "people": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
                "when": {"type": ["string", "null"]},
                "items": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            },
            "required": ["people", "when", "items"],
            "additionalProperties": False,
        }
    },
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
ASKED: Any = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    port = free_port()
    command = [sys.executable, str(FAKE), "--port", str(port), "--delay", "1.0"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/stats", timeout=1)
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "the fake model did not start"
            time.sleep(0.05)
    yield url
    process.kill()
    process.wait()


def client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)


def test_a_json_schema_answer_is_valid_and_stays(base: str) -> None:
    made = client(base).chat.completions.create(
        model="fake", messages=ASKED, response_format=FORMAT
    )  # type: ignore[call-overload]
    answer = made.choices[0].message.content
    assert answer is not None
    value = json.loads(answer)
    jsonschema.validate(value, SCHEMA)
    assert value["exit"] == "stay" and made.choices[0].finish_reason == "stop"


def test_a_forced_function_is_called_with_valid_arguments(base: str) -> None:
    tool = {"type": "function", "function": {"name": "answer", "parameters": SCHEMA}}
    forced = {"type": "function", "function": {"name": "answer"}}
    made = client(base).chat.completions.create(
        model="fake", messages=ASKED, tools=[tool], tool_choice=forced
    )  # type: ignore[call-overload]
    [call] = made.choices[0].message.tool_calls or []
    assert call.function.name == "answer" and made.choices[0].finish_reason == "tool_calls"
    jsonschema.validate(json.loads(call.function.arguments), SCHEMA)


def test_a_stream_joins_to_the_same_answer_and_plain_text_is_text(base: str) -> None:
    pieces = client(base).chat.completions.create(
        model="fake", messages=ASKED, response_format=FORMAT, stream=True
    )  # type: ignore[call-overload]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in pieces)
    jsonschema.validate(json.loads(text), SCHEMA)
    plain = client(base).chat.completions.create(model="fake", messages=ASKED)
    assert plain.choices[0].message.content == "ok"


def test_what_openai_refuses_is_refused(base: str) -> None:
    with pytest.raises(openai.BadRequestError, match="non-empty array"):
        client(base).chat.completions.create(model="fake", messages=[])
    refused = httpx.post(f"{base}/v1/chat/completions", content=b"{not json")
    assert refused.status_code == 400


def test_calls_wait_at_once_not_in_turn(base: str) -> None:
    before = httpx.get(f"{base}/stats").json()["calls"]
    shared = client(base)
    with ThreadPoolExecutor(40) as pool:
        done = list(
            pool.map(
                lambda _: shared.chat.completions.create(model="fake", messages=ASKED), range(40)
            )
        )
    stats = httpx.get(f"{base}/stats").json()
    assert len(done) == 40 and stats["calls"] == before + 40
    assert stats["most_waiting"] >= 20  # held together: 40 calls of 1 s, not one by one
