"""The records a session returns, and how a decision's step reads."""

from __future__ import annotations

from cgraph.runtime.state.records import Decision, step_name


def decision(kind: str, asked: bool = True, state: str = "triage") -> Decision:
    return Decision(state=state, kind=kind, chosen="x", reason="r", prompt_hash="ab" * asked)


def test_a_step_is_named_by_its_states_type() -> None:
    assert step_name(decision("action"), "action") == "triage (action)"
    assert step_name(decision("decision", asked=False), "annotation") == "triage (annotation)"


def test_the_request_kind_is_added_only_where_the_model_was_asked_as_something_else() -> None:
    asked = step_name(decision("decision"), "annotation")
    assert asked == "triage (annotation, asked as a decision)"
    assert step_name(decision("start", state="START"), None) == "START (start)"
