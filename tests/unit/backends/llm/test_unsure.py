"""A weak best exit barely ahead of the next one is a guess: the state asks again."""

from __future__ import annotations

from bench.semantic_cases import Case, request_for
from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.backends.llm.types import STAY


def test_a_weak_near_tie_stays_and_a_clear_lead_does_not() -> None:
    model = SemanticModel(embedder=shared_embedder())
    both = {"a", "b"}
    assert model.choose({"a": 0.165, "b": 0.152}, 0.0, answers=both, allow_stay=True) == STAY
    assert model.choose({"a": 0.19, "b": 0.12}, 0.0, answers=both, allow_stay=True) == "a"
    # A strong best exit is taken however close the next one is.
    assert model.choose({"a": 0.61, "b": 0.6}, 0.0, answers=both, allow_stay=True) == "a"
    assert model.choose({"a": 0.165, "b": 0.152}, 0.0, answers=both, allow_stay=False) == "a"


def test_clear_at_the_chest_pain_question_is_asked_again() -> None:
    model = SemanticModel(embedder=shared_embedder())
    case = Case("medical_checkin.yaml", "check_chest_pain", "clear", "stay", before=("hi",))
    answer = model.complete(request_for(case, model))
    assert '"exit": "stay"' in answer
