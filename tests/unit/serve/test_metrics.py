"""What `/metrics` counts of a turn, read back from its text with prometheus-client's own
parser: the outcome label of every kind of turn, the sessions that reached END, the tool
calls (a model's and a side-effect state's), and the model calls by purpose."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cgraph.observe import ModelCall
from cgraph.runtime.state.records import TransitionRecord
from cgraph.serve.metrics import Metrics, outcome
from cgraph.session import Turn
from cgraph.spec.names import START


def turn(**given: Any) -> Turn:
    fields: dict[str, Any] = {"session": "s", "number": 1, "user": "hi", "reply": "ok"}
    return Turn(**{**fields, "path": ("a",), "transitions": (), "state": "a", **given})


def move(source: str) -> TransitionRecord:
    return TransitionRecord(
        turn=1, from_state=source, to_state="b", exit_id="e", description="", reason="", at=0.0
    )


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (None, "error"),
        (turn(fallback=True, guard="max_reflections"), "fallback"),
        (turn(guard="max_transitions_per_turn"), "guard"),
        (turn(clarified=True, transitions=(move("a"),)), "clarified"),
        (turn(transitions=(move("a"),)), "moved"),
        (turn(transitions=(move(START),)), "stayed"),  # entering the first state is no move
        (turn(), "stayed"),
    ],
)
def test_each_turn_has_one_outcome(made: Turn | None, expected: str) -> None:
    assert outcome(made) == expected


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.text().decode())
        for s in family.samples
    }


def test_a_turn_that_ends_the_session_counts_it_and_its_tool_calls() -> None:
    metrics = Metrics()
    tools = ({"tool": "lookup", "status": "done"}, {"tool": "lookup", "status": "refused"})
    effects = ({"state": "book", "tool": "book", "status": "failed"},)
    metrics.turn("g", turn(completed=True, tool_calls=tools, effects=effects), 0.2)
    metrics.turn("g", None, 0.1)
    found = samples(metrics)
    assert found[("cgraph_sessions_completed_total", (("graph", "g"),))] == 1
    for tool, result in (("lookup", "done"), ("lookup", "refused"), ("book", "failed")):
        assert found[("cgraph_tool_calls_total", (("result", result), ("tool", tool)))] == 1
    assert found[("cgraph_turns_total", (("graph", "g"), ("outcome", "stayed")))] == 1
    assert found[("cgraph_turns_total", (("graph", "g"), ("outcome", "error")))] == 1
    assert found[("cgraph_turn_seconds_count", (("graph", "g"),))] == 2


def test_model_calls_and_their_tokens_are_counted_by_purpose() -> None:
    metrics = Metrics()
    base: dict[str, Any] = {"model": "m", "state": "a", "started": 0.0, "seconds": 0.5}
    metrics.model_call(ModelCall(kind="action", prompt_tokens=100, completion_tokens=20, **base))
    metrics.model_call(ModelCall(kind="extract", prompt_tokens=80, completion_tokens=9, **base))
    metrics.model_call(ModelCall(kind="summary", error="Timeout", **base))
    found = samples(metrics)

    def of(name: str, **labels: str) -> float:
        return found[(name, tuple(sorted({"model": "m", **labels}.items())))]

    assert of("cgraph_model_calls_total", purpose="turn", result="ok") == 1
    assert of("cgraph_model_calls_total", purpose="extraction", result="ok") == 1
    assert of("cgraph_model_calls_total", purpose="summary", result="error") == 1
    assert of("cgraph_model_tokens_total", purpose="turn", kind="prompt") == 100
    assert of("cgraph_model_tokens_total", purpose="extraction", kind="completion") == 9
    assert of("cgraph_model_call_seconds_count", purpose="summary") == 1
