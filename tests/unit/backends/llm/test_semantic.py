"""`semantic`: the offline chooser behind the `ChatModel` port, answering in JSON."""

from __future__ import annotations

import json

import pytest
from cgraph.backends.llm.registry import resolve_model as resolve

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel, question_of
from cgraph.runtime.ports import ExitOption, LLMRequest


@pytest.fixture(scope="module")
def model() -> SemanticModel:
    return SemanticModel(embedder=shared_embedder())


def _request(kind: str = "action", **fields: object) -> LLMRequest:
    options = (
        ExitOption("go", "The user is ready to start.", "go", ("Yes, I'm ready.", "Let's start.")),
        ExitOption("END", "The user wants to stop.", "END", ("Stop, I want to quit.",)),
    )
    base: dict[str, object] = dict(
        kind=kind,
        messages=(),
        schema={},
        schema_name="x",
        state="here",
        objective="Ask whether the user is ready.",
        options=options,
        allow_stay=kind == "action",
        stay_prototypes=("Ask whether the user is ready.",),
        authored_reply="Ready?",
    )
    base.update(fields)
    return LLMRequest(**base)  # type: ignore[arg-type]


def test_resolves_by_name() -> None:
    assert isinstance(resolve("semantic"), SemanticModel)


def test_an_exit_to_end_cannot_be_taken_back() -> None:
    question = question_of(_request(user_messages=("hi",)))
    assert [o.irreversible for o in question.options] == [False, True]


def test_an_answer_has_a_confidence_for_every_candidate(model: SemanticModel) -> None:
    answer = json.loads(model.complete(_request(user_messages=("Sure, we can begin now.",))))
    assert answer["exit"] == "go" and answer["reply"] == ""
    assert set(answer["scores"]) == {"go", "END", "stay"}
    assert sum(answer["scores"].values()) == pytest.approx(1, abs=0.01)


def test_just_entered_state_stays_and_speaks(model: SemanticModel) -> None:
    request = _request(user_messages=("Yes, I'm ready.",), entered_this_turn=True)
    answer = json.loads(model.complete(request))
    assert (answer["exit"], answer["reply"]) == ("stay", "Ready?")


def test_a_clarifying_question_is_answered_as_staying_with_the_question(
    model: SemanticModel,
) -> None:
    confirm = ExitOption("END", "The user wants to stop.", "END", ("Stop.",), confirm=True)
    request = _request(user_messages=("Stop, I want to quit.",), options=(confirm,))
    answer = json.loads(model.complete(request))
    assert answer["exit"] == "stay" and answer["reply"] == "Do you want to stop?"


def test_is_deterministic(model: SemanticModel) -> None:
    request = _request(user_messages=("ok go ahead",))
    assert model.complete(request) == model.complete(request)


def test_reflection_writes_a_note_and_takes_the_only_exit(model: SemanticModel) -> None:
    options = (ExitOption("next", "continue", "next"),)
    request = _request("reflection", options=options, user_messages=("I feel fine.",))
    answer = json.loads(model.complete(request))
    assert answer["exit"] == "next"
    assert "Ask whether the user is ready." in answer["note"] and "I feel fine." in answer["note"]


def test_extraction_keeps_statements_verbatim(model: SemanticModel) -> None:
    request = _request("extract", user_messages=("I always walk my dog after lunch.",))
    assert json.loads(model.complete(request)) == {
        "memories": [{"tier": "personal", "text": "I always walk my dog after lunch."}]
    }


pytestmark = pytest.mark.slow  # the real embedding model
