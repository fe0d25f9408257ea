"""Recording exchanges and replaying them: exact playback, loud failure on a mismatch."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cgraph.backends.llm.replay import (
    RecordingChooser,
    RecordingModel,
    ReplayChooser,
    ReplayModel,
    question_of,
)
from cgraph.errors import ConfigError, LLMError
from cgraph.runtime.ports import Capabilities, Choice, LLMRequest, Question, Quiet, Reason
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


class Refusing:
    """A stand-in for the offline chooser: stays, refusing a value, with no words of its own."""

    name = "semantic"

    def choose(self, question: Question) -> Choice:
        reason = Reason("invalid_slot", "a value was refused")
        return Choice("stay", reason, {"stay": 0.9}, preface="80 is above the maximum 50.")


def test_an_offline_recording_replays_the_choices_as_made(tmp_path: Path) -> None:
    """The replay gives the chooser's choice back (its preface, no words of its own), so
    the runtime words the reply as it did: not the state's text as it stood before."""
    path = tmp_path / "offline.jsonl"
    asked = Question("action", "ask_size", allow_stay=True, user_messages=("80 of us",))
    asked = replace(asked, authored_reply="How many?")
    made = RecordingChooser(Refusing(), path).choose(asked)
    replayed = resolve(f"replay:{path}")
    assert isinstance(replayed, ReplayChooser)
    again = replayed.choose(asked)
    assert (again.exit, again.reply, again.preface) == ("stay", "", made.preface)
    assert (again.reason, again.confidence) == (made.reason, made.confidence)
    other = replace(asked, user_messages=("90 of us",))
    assert replayed.choose(other).failed  # all used: a further question fails loudly
    assert "asked one more" in (replayed.failure or "")


def test_an_offline_question_that_differs_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "offline.jsonl"
    asked = Question("action", "ask_size", allow_stay=True, user_messages=("80 of us",))
    RecordingChooser(Refusing(), path).choose(asked)
    replayed = resolve(f"replay:{path}")
    assert isinstance(replayed, ReplayChooser)
    assert replayed.choose(replace(asked, user_messages=("9 of us",))).failed
    assert "does not match" in (replayed.failure or "") and "9 of us" in (replayed.failure or "")


def test_an_offline_recording_made_before_own_reply_replays_its_reply(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    asked = Question("action", "ask_size", allow_stay=True, user_messages=("hi",))
    old = {"exit": "stay", "reason": "given", "reply": "How many?", "scores": {}}
    entry = {"kind": "action", "state": "ask_size", "offline": True, "answer": json.dumps(old)}
    path.write_text(json.dumps({**entry, "question": question_of(asked)}) + "\n")
    replayed = resolve(f"replay:{path}")
    assert isinstance(replayed, ReplayChooser)
    assert replayed.choose(asked).reply == "How many?"
