"""`Session.stream` through the real litellm against local streaming servers: a plain
answer, and a turn with tool calls whose deltas litellm assembles before the answer
streams."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import LiteLLMModel
from cgraph.observe import ModelCall, watching
from cgraph.runtime.ask.streaming import CallingTools, Delta, Retracted
from cgraph.runtime.state.records import Turn
from cgraph.session import Session
from tests.servers.chat import (
    LLAMA_CPP_PYTHON,
    OPENAI,
    Calls,
    ChatServer,
    conversation_problem,
    serve,
)
from tests.servers.stream import StreamServer
from tests.unit.runtime._runtime import action, simple, write
from tests.unit.runtime.test_streaming import LONG, two_states
from tests.unit.runtime.tools.test_calls import TOOLS

pytestmark = pytest.mark.slow
TOOL_TOP = """\
memory: {store: "off"}
slots:
  day: {type: string, format: date, description: The day to look at.}
tools:
  - name: count_files
    description: Count the files in a folder.
    handler: agent_tools:count_files
    parameters:
      type: object
      properties: {folder: {type: string}}
      required: [folder]
      additionalProperties: false
"""


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")


def tool_graph(tmp_path: Path) -> Path:
    (tmp_path / "agent_tools.py").write_text(textwrap.dedent(TOOLS))
    body = action("a", {"END": "The user says bye."}, tools="[count_files]")
    return write(tmp_path, simple(start="a", top=TOOL_TOP, body=body))


def answer(reply: str, **slots: Any) -> dict[str, Any]:
    return {"exit": "stay", "reason": "answered", "reply": reply, "slots": {"day": None, **slots}}


def streamed(session: Session, message: str) -> tuple[list[Any], Turn]:
    *chunks, turn = session.stream(message, remember=False)
    assert isinstance(turn, Turn)
    return chunks, turn


def text(chunks: list[Any]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, Delta))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    docs_and_src = Calls((("count_files", {"folder": "docs"}), ("count_files", {"folder": "src"})))
    with serve(OPENAI, answers=[docs_and_src, answer(LONG)], piece=3) as running:
        yield running


def test_the_reply_streams_through_litellm(tmp_path: Path) -> None:
    answer = json.dumps({"exit": "stay", "reason": "greeting", "reply": LONG})
    with StreamServer(answer, pieces=30, delay=0.001) as server:
        session = Session.start(
            two_states(tmp_path), model="openai/test-model", api_base=server.base
        )
        *chunks, turn = session.stream("hi")
    assert server.bodies[0]["stream"] is True
    assert server.bodies[0]["response_format"]["type"] == "json_schema"
    assert isinstance(turn, Turn) and turn.reply == LONG
    deltas = [c for c in chunks if isinstance(c, Delta)]
    assert len(deltas) > 5 and "".join(d.text for d in deltas) == LONG


def test_a_tool_turn_streams_its_answer_after_parallel_calls(
    tmp_path: Path, server: ChatServer
) -> None:
    session = Session.start(tool_graph(tmp_path), model="openai/m", api_base=server.base)
    chunks, turn = streamed(session, "How many files are in docs and src?")
    assert turn.reply == LONG == text(chunks) and len(chunks) > 5 and not turn.fallback
    assert chunks[0] == CallingTools(("count_files", "count_files"))  # while they run
    assert [(c["arguments"], c["status"]) for c in turn.tool_calls] == [
        ({"folder": "docs"}, "done"),
        ({"folder": "src"}, "done"),
    ]
    first, second = server.bodies
    assert first["stream"] is second["stream"] is True and first["tool_choice"] == "auto"
    calls = second["messages"][-3]["tool_calls"]  # the calls, rebuilt from their deltas
    assert [c["function"]["arguments"] for c in calls] == [
        '{"folder": "docs"}',
        '{"folder": "src"}',
    ]
    assert [m["tool_call_id"] for m in second["messages"][-2:]] == ["call_0", "call_1"]


def test_in_tool_mode_the_answer_call_streams(tmp_path: Path, server: ChatServer) -> None:
    model = LiteLLMModel("openai/m", api_base=server.base, structured="tool")
    chunks, turn = streamed(Session.start(tool_graph(tmp_path), model=model), "count them")
    assert turn.reply == LONG == text(chunks) and len(chunks) > 5
    assert [c["status"] for c in turn.tool_calls] == ["done", "done"]
    names = [t["function"]["name"] for t in server.bodies[0]["tools"]]
    assert names == ["count_files", "cgraph_action"]
    assert server.bodies[0]["tool_choice"] == "required"


def test_a_rejected_answer_in_a_tool_turn_is_retracted_then_streamed_again(
    tmp_path: Path,
) -> None:
    wrong = answer("Tuesday it is; I counted 3 files.", day="next tuesday")
    scripted = [Calls((("count_files", {"folder": "docs"}),)), wrong, answer(LONG)]
    with serve(OPENAI, answers=scripted, piece=5) as server:
        session = Session.start(tool_graph(tmp_path), model="openai/m", api_base=server.base)
        chunks, turn = streamed(session, "count the files for next tuesday")
    cut = next(i for i, c in enumerate(chunks) if isinstance(c, Retracted))
    assert text(chunks[:cut]) == chunks[cut].shown == wrong["reply"]
    assert text(chunks[cut + 1 :]) == turn.reply == LONG
    assert session.variables.get("day") is None  # the rejected value was never kept
    assert len(server.bodies) == 3 and "tools" not in server.bodies[2]  # a re-ask offers none


def test_the_first_words_arrive_while_the_server_still_writes(tmp_path: Path) -> None:
    scripted = [Calls((("count_files", {"folder": "docs"}),)), answer(LONG)]
    with serve(OPENAI, answers=scripted, hold_after=20) as server:
        session = Session.start(tool_graph(tmp_path), model="openai/m", api_base=server.base)
        chunks = session.stream("count the files", remember=False)
        first = next(c for c in chunks if isinstance(c, Delta))
        assert not server.go.is_set() and LONG.startswith(first.text)
        server.go.set()
        *rest, turn = chunks
    assert isinstance(turn, Turn) and first.text + text(rest) == turn.reply == LONG


def test_the_fake_server_refuses_what_openai_refuses() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    answered = {"role": "tool", "tool_call_id": "c1", "content": "3"}
    user = {"role": "user", "content": "hi"}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    assert conversation_problem({"messages": [user, asked, answered, user]}) is None
    assert "preceeding message" in str(conversation_problem({"messages": [user, answered]}))
    assert "c1" in str(conversation_problem({"messages": [user, asked, user]}))
    as_object = {**asked, "tool_calls": [{**call, "function": {"name": "f", "arguments": {}}}]}
    assert "expected a string" in str(conversation_problem({"messages": [as_object, answered]}))
    assert "only allowed when 'tools'" in str(
        conversation_problem({"messages": [user], "tool_choice": "auto"})
    )
    assert "stream_options" in str(
        conversation_problem({"messages": [user], "stream_options": {}, "tools": tools})
    )
    bad_name = [{"type": "function", "function": {"name": "no spaces"}}]
    assert "function.name" in str(conversation_problem({"messages": [user], "tools": bad_name}))


def test_a_forced_answer_call_streams_from_llama_cpp_python(tmp_path: Path) -> None:
    # json_schema is refused (500), so the answer is a forced call whose every delta
    # repeats the call's id and name, as llama-cpp-python streams it.
    plain = {"exit": "stay", "reason": "greeting", "reply": LONG}
    with serve(LLAMA_CPP_PYTHON, answers=[plain], piece=3) as server:
        session = Session.start(two_states(tmp_path), model="openai/m", api_base=server.base)
        chunks, turn = streamed(session, "hi")
    assert turn.reply == LONG == text(chunks) and len(chunks) > 5
    refused, forced = server.bodies
    assert refused["response_format"]["type"] == "json_schema"
    assert forced["stream"] is True and forced["tool_choice"]["function"]["name"] == "cgraph_action"


def test_prose_where_a_call_was_forced_is_never_shown_and_the_next_answer_streams(
    tmp_path: Path,
) -> None:
    # llama-cpp-python does not enforce `tool_choice: required`: after its tool round the
    # model answers in prose; `auto` then asks again in `json_object`, whose answer must
    # stream whole, not appended to the prose that came first.
    docs = Calls((("count_files", {"folder": "docs"}),))
    with serve(LLAMA_CPP_PYTHON, answers=[docs, answer(LONG)], piece=3) as server:
        session = Session.start(tool_graph(tmp_path), model="openai/m", api_base=server.base)
        chunks, turn = streamed(session, "How many files are in docs?")
    assert turn.reply == LONG and not turn.fallback
    assert text(chunks) == LONG  # the prose ("How can I help you today?") never shown
    assert any("answered in prose" in w for w in turn.warnings)


def _drained(session: Session, how: str) -> Turn:
    """A streamed turn of `session`: `send_streaming` as `cgraph run` calls it, `stream` as
    a program calls it (the turn in a worker thread), or `astream` as `cgraph serve` does."""
    if how == "send_streaming":
        return session.send_streaming("hi", lambda chunk: None, remember=False)
    if how == "stream":
        found = list(session.stream("hi", remember=False))[-1]
    else:

        async def drained() -> list[Any]:
            return [c async for c in session.astream("hi", remember=False)]

        found = asyncio.run(drained())[-1]
    assert isinstance(found, Turn)
    return found


@pytest.mark.parametrize("how", ["send_streaming", "stream", "astream"])
def test_a_streamed_call_reports_the_tokens_the_provider_counted(tmp_path: Path, how: str) -> None:
    """What metrics and spans count of a streamed model call is the provider's usage (the
    local server counts 10 and 5 tokens an answer), whichever path streamed it."""
    plain = {"exit": "stay", "reason": "greeting", "reply": LONG}
    calls: list[ModelCall] = []
    with serve(OPENAI, answers=[plain], piece=6) as server, watching(calls.append):
        session = Session.start(two_states(tmp_path), model="openai/m", api_base=server.base)
        assert _drained(session, how).reply == LONG
    assert [b["stream_options"] for b in server.bodies] == [{"include_usage": True}]
    (call,) = calls
    assert call.streamed and (call.prompt_tokens, call.completion_tokens) == (10, 5)
