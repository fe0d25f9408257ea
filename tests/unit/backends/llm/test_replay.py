"""Recording exchanges and replaying them: exact playback, loud failure on a mismatch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cgraph.backends.llm.replay import RecordingModel, ReplayModel
from cgraph.errors import ConfigError, LLMError
from cgraph.runtime.ports import Capabilities, LLMRequest, Question, Quiet
from cgraph.wiring.models import resolve_model as resolve


class Echo(Quiet):
    """A stand-in model: answers with the state it was asked about."""

    name = "echo"
    capabilities = Capabilities()

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: LLMRequest) -> str:
        self.calls += 1
        if request.state == "broken":
            raise LLMError("provider down")
        return json.dumps({"exit": "stay", "reason": request.state, "reply": "hi"})


def _request(state: str = "greet", text: str = "hello") -> LLMRequest:
    return LLMRequest(
        kind="action",
        messages=({"role": "system", "content": "You greet."}, {"role": "user", "content": text}),
        schema={"type": "object", "properties": {"exit": {"enum": ["stay", "END"]}}},
        schema_name="cgraph_action",
        state=state,
        question=Question("action", state, allow_stay=True),
    )


def _record(path: Path, *requests: LLMRequest) -> list[str]:
    recorder = RecordingModel(Echo(), path)
    return [recorder.complete(r) for r in requests]


def test_recording_writes_one_json_line_per_exchange(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _record(path, _request(), _request("ask", "yes"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["state"] for e in lines] == ["greet", "ask"]
    assert lines[1]["messages"][1] == {"role": "user", "content": "yes"}
    assert lines[0]["schema"]["properties"]["exit"]["enum"] == ["stay", "END"]
    assert json.loads(lines[0]["answer"])["reason"] == "greet"


def test_replay_answers_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    answers = _record(path, _request(), _request("ask", "yes"))
    replay = resolve(f"replay:{path}")
    assert isinstance(replay, ReplayModel)
    assert [replay.complete(_request()), replay.complete(_request("ask", "yes"))] == answers
    assert replay.remaining == 0


def test_a_changed_message_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _record(path, _request())
    replay = ReplayModel(str(path))
    with pytest.raises(LLMError) as caught:
        replay.complete(_request(text="good evening"))
    message = caught.value.message
    assert "exchange 1 does not match" in message
    assert '-    "content": "hello",' in message
    assert '+    "content": "good evening",' in message
    assert replay.failure == message
    with pytest.raises(LLMError):  # once failed, it stays failed
        replay.complete(_request())


def test_a_different_state_or_an_extra_request_fails(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _record(path, _request())
    with pytest.raises(LLMError, match="state"):
        ReplayModel(str(path)).complete(_request("elsewhere"))
    replay = ReplayModel(str(path))
    replay.complete(_request())
    with pytest.raises(LLMError, match="all were used"):
        replay.complete(_request())


def test_recorded_errors_are_replayed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    recorder = RecordingModel(Echo(), path)
    with pytest.raises(LLMError):
        recorder.complete(_request("broken"))
    with pytest.raises(LLMError, match="provider down"):
        ReplayModel(str(path)).complete(_request("broken"))
    assert ReplayModel(str(path)).failure is None


def test_unreadable_recordings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        ReplayModel(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "action", "state": "a"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl:2"):
        ReplayModel(str(bad))
    with pytest.raises(ConfigError, match="replay:FILE"):
        ReplayModel("")


def test_recording_passes_the_models_notices_and_turns_through(tmp_path: Path) -> None:
    class Negotiating(Echo):
        def __init__(self) -> None:
            super().__init__()
            self.turns = 0
            self.said = ["the server refused `json_schema` structured output; using `tool`"]

        def begin_turn(self) -> None:
            self.turns += 1

        def notices(self) -> tuple[str, ...]:
            found, self.said = self.said, []
            return tuple(found)

    inner = Negotiating()
    recorder = RecordingModel(inner, tmp_path / "run.jsonl")
    recorder.begin_turn()
    assert inner.turns == 1  # the turn's deadline starts in the wrapped model
    assert recorder.notices() == (
        "the server refused `json_schema` structured output; using `tool`",
    )
    assert recorder.notices() == ()  # said once
