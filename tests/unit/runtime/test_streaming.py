"""Replies streamed as they are written: deltas, retraction on a re-ask, moves never shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.ask.streaming import Delta, Retracted, partial_answer
from cgraph.runtime.ports import Capabilities, Quiet
from cgraph.runtime.state.records import Turn
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, simple, stay, write

LONG = "Hello! I am glad you are here; tell me what brings you in today."


def two_states(tmp_path: Path) -> Path:
    body = action("a", {"b": "The user is ready."}) + action("b", {"END": "The user says bye."})
    return write(tmp_path, simple(start="a", body=body))


def streamed(session: Session, message: str) -> tuple[list[Any], Turn]:
    chunks = list(session.stream(message))
    turn = chunks.pop()
    assert isinstance(turn, Turn)
    return chunks, turn


def test_the_reply_arrives_in_pieces_then_the_turn(tmp_path: Path) -> None:
    model = ScriptedModel({"a": stay(LONG)}, chunk=5)
    chunks, turn = streamed(Session.start(two_states(tmp_path), model=model), "hi")
    assert all(isinstance(c, Delta) for c in chunks) and len(chunks) > 5
    assert "".join(c.text for c in chunks) == turn.reply == LONG


def test_a_rejected_answer_is_retracted_and_the_new_one_streamed(tmp_path: Path) -> None:
    half = '{"exit": "stay", "reason": "r", "reply": "A half answer'  # cut off: not JSON
    model = ScriptedModel({"a": [half, stay(LONG)]}, chunk=4)
    chunks, turn = streamed(Session.start(two_states(tmp_path), model=model), "hi")
    cut = next(i for i, c in enumerate(chunks) if isinstance(c, Retracted))
    assert "".join(c.text for c in chunks[:cut]) == chunks[cut].shown == "A half answer"
    assert "".join(c.text for c in chunks[cut + 1 :]) == turn.reply == LONG


def test_the_words_of_a_move_are_never_shown(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [go("b", reply="Moving you on.")], "b": stay("Now in b.")})
    chunks, turn = streamed(Session.start(two_states(tmp_path), model=model), "ready")
    assert turn.state == "b" and "".join(c.text for c in chunks) == "Now in b."


def test_partial_answers_are_read_by_a_partial_json_parser() -> None:
    assert partial_answer('{"exit": "st') == (None, "")
    assert partial_answer('{"exit": "stay", "reason": "r", "reply": "Hel') == ("stay", "Hel")
    assert partial_answer('{"reply": "He said \\"hi') == (None, 'He said "hi')
    assert partial_answer("not json") == (None, "")


def test_a_model_that_cannot_stream_gives_the_reply_whole(tmp_path: Path) -> None:
    class Whole(Quiet):
        name = "whole"
        capabilities = Capabilities(streams=False)

        def complete(self, request: Any) -> str:
            return '{"exit": "stay", "reason": "r", "reply": "All at once."}'

    chunks, turn = streamed(Session.start(two_states(tmp_path), model=Whole()), "hi")
    assert chunks == [Delta("All at once.")] and turn.reply == "All at once."
