"""Validating what a model answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.ask.answers import AnswerError, answer_schema, parse_answer, tool_calls_of
from cgraph.runtime.ports import ExitOption, LLMRequest, Question
from cgraph.session import Session
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"


def request(kind: str = "action", stay: bool = True) -> LLMRequest:
    options = (ExitOption("b", "to b", "b"), ExitOption("END", "finish", "END"))
    asked = Question(kind, "a", options=options, allow_stay=stay)  # type: ignore[arg-type]
    return LLMRequest(
        kind=kind,  # type: ignore[arg-type]
        messages=(),
        schema={},
        schema_name="x",
        state="a",
        question=asked,
    )


def test_valid_answers() -> None:
    answer = parse_answer(
        '{"exit": "b", "reason": " r ", "reply": "", "scores": {"b": 0.9, "x": "no"}}', request()
    )
    assert (answer.exit, answer.reason, answer.scores) == ("b", "r", {"b": 0.9})
    fenced = parse_answer('```json\n{"exit": "stay", "reason": "", "reply": "hi"}\n```', request())
    assert fenced.reply == "hi"
    note = parse_answer('{"note": "n", "exit": "END", "reason": "r"}', request("reflection", False))
    assert note.note == "n"
    memories = parse_answer(
        '{"memories": [{"tier": "task", "text": " x "}, {"tier": "task", "text": ""}]}',
        request("extract"),
    )
    assert memories.memories == (("task", "x"),)


@pytest.mark.parametrize(
    ("raw", "kind", "message"),
    [
        ("", "action", "empty"),
        ("nope", "action", "not valid JSON"),
        ("[]", "action", "must be a JSON object"),
        ('{"reason": "r"}', "action", '"exit" is missing'),
        ('{"exit": "c"}', "action", "`c`, which is not one of b, END, stay"),
        ('{"exit": "stay", "reply": " "}', "action", '"reply" is empty'),
        ('{"exit": "stay"}', "decision", "not one of b, END"),
        ('{"exit": "b", "note": ""}', "reflection", '"note" is empty'),
        ('{"exit": "b", "reply": 3}', "action", '"reply" must be a string'),
        ('{"memories": [{"tier": "forever", "text": "x"}]}', "extract", "tier `forever`"),
    ],
)
def test_invalid_answers_say_what_is_wrong(raw: str, kind: str, message: str) -> None:
    with pytest.raises(AnswerError, match=message.replace("(", r"\(")):
        parse_answer(raw, request(kind, stay=kind == "action"))


def test_schemas_are_strict_and_enumerate_exits() -> None:
    schema = answer_schema("action", ("b", "END", "stay"))
    assert schema["properties"]["exit"]["enum"] == ["b", "END", "stay"]
    assert (
        schema["required"] == ["exit", "reason", "reply"]
        and schema["additionalProperties"] is False
    )
    assert answer_schema("reflection", ("b",))["required"] == ["note", "exit", "reason"]
    assert answer_schema("extract", ())["properties"]["memories"]["items"]["properties"]["tier"][
        "enum"
    ] == ["personal", "project", "task"]


def test_bad_json_is_named_once_where_it_breaks() -> None:
    with pytest.raises(AnswerError) as failed:
        parse_answer('{"exit": "stay", "reply": "Hel', request())
    assert failed.value.message == (
        "the answer is not valid JSON (Unterminated string starting at: line 1 column 27 (char 26))"
    )


def test_a_lone_surrogate_a_model_wrote_is_a_broken_character_not_a_bricked_session(
    tmp_path: Path,
) -> None:
    raw = '{"exit": "stay", "reason": "r\\ud800", "reply": "Hi \\udfff there \\ud83d\\ude00"}'
    answer = parse_answer(raw, request())
    assert answer.reply == "Hi \ufffd there \U0001f600" and answer.reason == "r\ufffd"
    assert tool_calls_of(
        '{"tool_calls": [{"name": "t", "arguments": "{\\"a\\": \\"\\\\ud800\\"}"}]}'
    )[0].arguments == {"a": "\ufffd"}
    # through a session: the next turn (which hashes the transcript) and a resume go on
    said = {"*": {"exit": "stay", "reason": "r\ud800", "reply": "Hi \ud800 there"}}
    session = Session.start(CHECKIN, model=ScriptedModel(said), store=tmp_path)
    assert session.send("hello").reply == "Hi \ufffd there"
    assert session.send("again").reply == "Hi \ufffd there"
    session.close()
    resumed = Session.resume(session.id, store=tmp_path, model=ScriptedModel(said))
    assert resumed.send("once more").reply == "Hi \ufffd there"
    resumed.close()
