"""A weak best exit barely ahead of the next one is a guess: the state asks again."""

from __future__ import annotations

from bench.semantic_cases import Case, question_for
from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel


def test_clear_at_the_chest_pain_question_is_asked_again() -> None:
    model = SemanticModel(embedder=shared_embedder())
    case = Case("medical_checkin.yaml", "check_chest_pain", "clear", "stay", before=("hi",))
    assert model.choose(question_for(case)).exit == "stay"
