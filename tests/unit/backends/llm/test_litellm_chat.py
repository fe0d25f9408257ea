"""The litellm adapter: structured output per provider, bounded retries with jitter."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import LiteLLMModel, _retryable
from cgraph.backends.llm.types import ExitOption, LLMRequest
from cgraph.errors import LLMError
from cgraph.runtime.answers import answer_schema

REQUEST = LLMRequest(
    kind="action", messages=({"role": "system", "content": "s"}, {"role": "user", "content": "u"}),
    schema=answer_schema("action", ("b", "stay")), schema_name="cgraph_action", state="a",
    options=(ExitOption("b", "to b", "b"),), allow_stay=True,
)  # fmt: skip


def response(content: str | None = '{"exit": "stay"}', arguments: str | None = None) -> Any:
    calls = [SimpleNamespace(function=SimpleNamespace(arguments=arguments))] if arguments else None
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=content, tool_calls=calls))]
    )


class Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status_code = status


class RateLimitError(Exception):
    pass


def test_json_schema_mode_sends_the_enum_strictly() -> None:
    args = LiteLLMModel("openai/x", api_base="http://h/v1", structured="json_schema").arguments(
        REQUEST
    )
    fmt = args["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["exit"]["enum"] == ["b", "stay"]
    assert args["api_base"] == "http://h/v1" and args["num_retries"] == 0
    assert args["messages"] == [dict(m) for m in REQUEST.messages]


def test_tool_and_json_object_modes() -> None:
    tool = LiteLLMModel("x", structured="tool").arguments(REQUEST)
    assert tool["tools"][0]["function"]["parameters"] == REQUEST.schema
    assert tool["tool_choice"]["function"]["name"] == "cgraph_action"
    assert LiteLLMModel("x", structured="json_object").arguments(REQUEST)["response_format"] == {
        "type": "json_object"
    }


def test_answers_come_from_content_or_the_tool_call() -> None:
    model = LiteLLMModel("x", structured="tool", completion=lambda **_: response(None, '{"a": 1}'))
    assert model.complete(REQUEST) == '{"a": 1}'
    model = LiteLLMModel("x", structured="json_schema", completion=lambda **_: response(None))
    assert model.complete(REQUEST) == ""  # empty: the engine re-asks


def test_transient_errors_retry_with_bounded_jittered_backoff() -> None:
    failures: list[Exception] = [Status(500), RateLimitError("slow down"), Status(503)]
    sleeps: list[float] = []

    def completion(**_: Any) -> Any:
        if failures:
            raise failures.pop(0)
        return response('{"exit": "b"}')

    model = LiteLLMModel(
        "x", structured="json_schema", retries=3, backoff=1.0, max_backoff=3.0,
        completion=completion, sleep=sleeps.append, jitter=lambda: 1.0,
    )  # fmt: skip
    assert model.complete(REQUEST) == '{"exit": "b"}' and model.calls == 4
    assert sleeps == [1.0, 2.0, 3.0]  # 1, 2, 4 capped at 3 (jitter at its maximum)
    low = LiteLLMModel("x", backoff=1.0, jitter=lambda: 0.0)
    assert [low._delay(n) for n in range(3)] == [0.5, 1.0, 2.0]


def test_retries_are_bounded_then_llm_error() -> None:
    sleeps: list[float] = []
    model = LiteLLMModel("x", structured="json_schema", retries=2, sleep=sleeps.append,
                         completion=lambda **_: (_ for _ in ()).throw(Status(502)))  # fmt: skip
    with pytest.raises(LLMError, match="failed after 3 attempts"):
        model.complete(REQUEST)
    assert len(sleeps) == 2 and model.calls == 3


def test_non_transient_errors_are_not_retried() -> None:
    model = LiteLLMModel("x", structured="json_schema", sleep=lambda s: None,
                         completion=lambda **_: (_ for _ in ()).throw(Status(401)))  # fmt: skip
    with pytest.raises(LLMError, match="Status: status 401"):
        model.complete(REQUEST)
    assert model.calls == 1
    assert _retryable(Status(429)) and _retryable(Status(500)) and not _retryable(ValueError())


def test_offered_tools_go_beside_the_answer_and_their_calls_come_back_as_tool_calls() -> None:
    from dataclasses import replace

    from cgraph.backends.llm.litellm_chat import _content

    function = {"name": "count", "description": "", "parameters": {"type": "object"}}
    request = replace(REQUEST, tools=(function,))
    args = LiteLLMModel("x", structured="json_schema").arguments(request)
    assert args["tools"] == [{"type": "function", "function": function}]
    assert args["tool_choice"] == "auto" and "response_format" in args
    forced = LiteLLMModel("x", structured="tool").arguments(request)
    names = [t["function"]["name"] for t in forced["tools"]]
    assert names == ["count", REQUEST.schema_name] and forced["tool_choice"] == "required"
    call = SimpleNamespace(id="c1", function=SimpleNamespace(name="count", arguments='{"n": 1}'))
    message = SimpleNamespace(content=None, tool_calls=[call])
    answer = _content(SimpleNamespace(choices=[SimpleNamespace(message=message)]), request)
    assert json.loads(answer) == {
        "tool_calls": [{"id": "c1", "name": "count", "arguments": '{"n": 1}'}]
    }
