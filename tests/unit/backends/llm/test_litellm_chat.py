"""The litellm adapter: modes, negotiation, retries within a deadline, permanent errors."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import LiteLLMModel
from cgraph.errors import LLMError
from cgraph.runtime.ask.answers import answer_schema
from cgraph.runtime.ports import ExitOption, LLMRequest, Question

REQUEST = LLMRequest(
    kind="action",
    messages=(
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "system", "content": "late"},
    ),
    schema=answer_schema("action", ("b", "stay")),
    schema_name="cgraph_action",
    state="a",
    question=Question("action", "a", options=(ExitOption("b", "to b", "b"),), allow_stay=True),
)


def response(content: str | None = '{"exit": "stay"}', arguments: str | None = None) -> Any:
    calls = [SimpleNamespace(function=SimpleNamespace(arguments=arguments))] if arguments else None
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=content, tool_calls=calls))]
    )


class Status(Exception):
    def __init__(self, status: int, text: str = "") -> None:
        super().__init__(text or f"status {status}")
        self.status_code = status


class RateLimitError(Exception):
    pass


def failing(*errors: Exception) -> Any:
    """A completion raising `errors` in turn, then answering; it records its arguments."""
    pending = list(errors)
    sent: list[dict[str, Any]] = []

    def completion(**args: Any) -> Any:
        sent.append(args)
        if pending:
            raise pending.pop(0)
        return response('{"exit": "b"}')

    completion.sent = sent  # type: ignore[attr-defined]
    return completion


def model(completion: Any, **options: Any) -> LiteLLMModel:
    options = {"structured": "json_schema", "sleep": lambda s: None, **options}
    return LiteLLMModel("openai/x", api_base="http://h/v1", completion=completion, **options)


def test_json_schema_mode_sends_the_enum_strictly() -> None:
    args = model(None).arguments(REQUEST)
    fmt = args["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["exit"]["enum"] == ["b", "stay"]
    assert args["api_base"] == "http://h/v1" and args["num_retries"] == 0
    assert args["messages"] == [dict(m) for m in REQUEST.messages]


def test_tool_and_json_object_modes() -> None:
    tool = model(None, structured="tool").arguments(REQUEST)
    assert tool["tools"][0]["function"]["parameters"] == REQUEST.schema
    assert tool["tool_choice"]["function"]["name"] == "cgraph_action"
    assert "response_format" not in tool
    plain = model(None, structured="json_object").arguments(REQUEST)
    assert plain["response_format"] == {"type": "json_object", "schema": REQUEST.schema}
    assert '"enum":["b","stay"]' in plain["messages"][-1]["content"]  # the schema in the prompt


def test_one_system_message_folds_every_system_text_into_the_first() -> None:
    messages = model(None, one_system=True).arguments(REQUEST)["messages"]
    assert messages == [
        {"role": "system", "content": "s\n\nlate"},
        {"role": "user", "content": "u"},
    ]


def test_answers_come_from_content_or_the_tool_call() -> None:
    tool = model(lambda **_: response(None, '{"a": 1}'), structured="tool")
    assert tool.complete(REQUEST) == '{"a": 1}'
    assert model(lambda **_: response(None)).complete(REQUEST) == ""  # empty: re-asked


def test_transient_errors_retry_with_bounded_jittered_backoff() -> None:
    sleeps: list[float] = []
    completion = failing(Status(500), RateLimitError("slow down"), Status(503))
    chat = model(
        completion, retries=3, backoff=1.0, max_backoff=3.0, sleep=sleeps.append, jitter=lambda: 1.0
    )
    assert chat.complete(REQUEST) == '{"exit": "b"}' and chat.calls == 4
    assert sleeps == [1.0, 2.0, 3.0]  # 1, 2, 4 capped at 3 (jitter at its maximum)
    low = LiteLLMModel("x", backoff=1.0, jitter=lambda: 0.0)
    assert [low._delay(n) for n in range(3)] == [0.5, 1.0, 2.0]


def test_retries_are_bounded_then_a_transient_llm_error() -> None:
    chat = model(failing(*[Status(502)] * 5), retries=2)
    with pytest.raises(LLMError, match="failed after 3 attempts") as caught:
        chat.complete(REQUEST)
    assert chat.calls == 3 and not caught.value.permanent


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_permanent_errors_are_raised_at_once(status: int) -> None:
    chat = model(failing(Status(status, "Incorrect API key provided")))
    with pytest.raises(LLMError, match="Incorrect API key provided") as caught:
        chat.complete(REQUEST)
    assert chat.calls == 1 and caught.value.permanent


def test_an_unknown_provider_module_is_permanent() -> None:
    chat = model(failing(ModuleNotFoundError("No module named 'boto3'")))
    with pytest.raises(LLMError, match="boto3") as caught:
        chat.complete(REQUEST)
    assert caught.value.permanent and chat.calls == 1


def test_auto_moves_to_the_next_mode_once_and_remembers_it() -> None:
    refusal = Status(500, "Error code: 500 - {'error': {'message': 'response_format: bad'}}")
    completion = failing(refusal)
    chat = model(completion, structured="auto")
    chat.negotiation.order = ("json_schema", "tool", "json_object")
    assert chat.complete(REQUEST) == '{"exit": "b"}'
    assert chat.mode() == "tool" and chat.calls == 2
    assert "response_format" in completion.sent[0] and "tools" in completion.sent[1]
    assert chat.notices() == (
        "the server refused `json_schema` structured output (response_format: bad); "
        "using `tool` for the rest of the session",
    )
    assert chat.notices() == ()  # said once
    chat.complete(REQUEST)
    assert "tools" in completion.sent[2]


def test_an_explicit_mode_the_server_refuses_is_permanent() -> None:
    chat = model(failing(Status(400, "tools are not supported")), structured="tool")
    with pytest.raises(LLMError, match="tools are not supported") as caught:
        chat.complete(REQUEST)
    assert caught.value.permanent and chat.calls == 1


def test_a_template_that_wants_one_system_message_gets_one() -> None:
    completion = failing(Status(500, "System message must be at the beginning."))
    chat = model(completion)
    chat.complete(REQUEST)
    assert [m["role"] for m in completion.sent[1]["messages"]] == ["system", "user"]
    assert "leading system message" in chat.notices()[0]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_retries_stop_at_the_turns_deadline() -> None:
    clock = Clock()

    budgets: list[float] = []

    def slow_failure(**args: Any) -> Any:
        budgets.append(args["timeout"])
        clock.now += min(4.0, args["timeout"])
        raise Status(503)

    chat = model(
        slow_failure,
        retries=10,
        timeout=10.0,
        clock=clock,
        sleep=clock.sleep,
        backoff=1.0,
        jitter=lambda: 0.0,
    )
    chat.begin_turn()
    with pytest.raises(LLMError):
        chat.complete(REQUEST)
    assert budgets == [10.0, 5.5, 0.5] and clock.now == 10.0  # waits of 0.5 and 1 s between


def test_the_deadline_is_passed_to_each_call() -> None:
    clock = Clock()
    completion = failing(Status(503))
    chat = model(completion, timeout=10.0, clock=clock, sleep=clock.sleep, jitter=lambda: 0.0)
    chat.begin_turn()
    clock.now = 3.0
    chat.complete(REQUEST)
    assert completion.sent[0]["timeout"] == 7.0 and completion.sent[1]["timeout"] == 6.75


def test_a_timeout_against_a_local_server_is_not_retried() -> None:
    class Timeout(Exception):
        pass

    local = model(failing(Timeout("Request timed out")), retries=3)
    local.api_base = "http://127.0.0.1:8080/v1"
    with pytest.raises(LLMError, match="timed out") as caught:
        local.complete(REQUEST)
    assert local.calls == 1 and not caught.value.permanent
    remote = LiteLLMModel(
        "openai/x",
        api_base="https://api.example.com/v1",
        sleep=lambda s: None,
        structured="json_schema",
        completion=failing(Timeout("slow")),
    )
    remote.complete(REQUEST)
    assert remote.calls == 2


def test_a_call_that_outlives_the_deadline_is_abandoned() -> None:
    import threading

    release = threading.Event()

    def stalls(**_: Any) -> Any:
        release.wait(5)
        return response()

    chat = model(stalls, timeout=0.3, retries=0)
    try:
        with pytest.raises(LLMError, match="no answer within"):
            chat.complete(REQUEST)
    finally:
        release.set()


def test_offered_tools_go_beside_the_answer_and_their_calls_come_back_as_tool_calls() -> None:
    from dataclasses import replace

    from cgraph.backends.llm.responses import content

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
    answer = content(SimpleNamespace(choices=[SimpleNamespace(message=message)]), request)
    assert json.loads(answer) == {
        "tool_calls": [{"id": "c1", "name": "count", "arguments": '{"n": 1}'}]
    }


def refused() -> Exception:
    """What litellm raises when nobody listens: a 500 'Connection error.' over the refusal."""
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            raise Status(500, "InternalServerError: OpenAIException - Connection error.") from inner
    except Status as err:
        return err


def test_a_refused_connection_is_reported_at_once_naming_the_address() -> None:
    chat = model(failing(refused(), refused()), retries=3)
    with pytest.raises(LLMError) as failed:
        chat.complete(REQUEST)
    assert failed.value.permanent and chat.calls == 1
    assert failed.value.message == (
        "model `openai/x`: cannot reach its server at http://h/v1 (connection refused); "
        "start the server, or check --api-base"
    )


def cut(content: str) -> Any:
    """A response a server ended at `max_tokens`: `finish_reason` is "length"."""
    message = SimpleNamespace(content=content, tool_calls=None)
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="length")])


def test_an_answer_cut_at_the_token_cap_says_so_and_how_to_raise_it() -> None:
    chat = model(lambda **args: cut('{"exit": "stay", "reason": "r", "reply": "Hello, I am'))
    with pytest.raises(LLMError) as failed:
        chat.complete(REQUEST)
    assert failed.value.message == (
        "model `openai/x` stopped at its cap of 600 tokens before its answer was complete "
        "(finish_reason: length); raise it with --max-tokens N or the graph's "
        "`model.max_tokens`"
    )
    assert not failed.value.permanent and chat.calls == 1
    whole = '{"exit": "stay", "reason": "r", "reply": "Hi."}'
    assert model(lambda **args: cut(whole)).complete(REQUEST) == whole  # complete all the same


def test_each_call_is_reported_to_its_watchers_with_tokens_and_retries() -> None:
    from cgraph.observe import ModelCall, watching

    answered = response('{"exit": "b"}')
    answered.usage = SimpleNamespace(prompt_tokens=120, completion_tokens=7)
    pending: list[Exception] = [Status(503)]

    def completion(**args: Any) -> Any:
        if pending:
            raise pending.pop(0)
        return answered

    seen: list[ModelCall] = []
    with watching(seen.append):
        assert model(completion).complete(REQUEST) == '{"exit": "b"}'
    model(completion).complete(REQUEST)  # nobody watches: nothing reported
    (call,) = seen
    assert (call.model, call.kind, call.state, call.mode) == (
        "openai/x",
        "action",
        "a",
        "json_schema",
    )
    assert (call.attempts, call.prompt_tokens, call.completion_tokens) == (2, 120, 7)
    assert call.reply == '{"exit": "b"}' and call.messages == REQUEST.messages
    assert call.error is None and not call.streamed and call.seconds >= 0
    with watching(seen.append), pytest.raises(LLMError):
        model(failing(Status(401)), retries=0).complete(REQUEST)
    assert seen[-1].error == "LLMError"
