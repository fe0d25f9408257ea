"""Prompts: static before dynamic, token-bounded history, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import RenderError
from cgraph.runtime.ask import prompts
from cgraph.runtime.ask.prompts import render_messages
from cgraph.runtime.log.transcript import estimate_tokens, history_start
from cgraph.session import Session
from tests.conftest import GRAPHS
from tests.unit.runtime._runtime import go, stay


def test_messages_run_static_to_dynamic_and_the_system_part_is_stable() -> None:
    model = ScriptedModel({"welcome_patient": [stay("Hello?"), stay("Still here.")]})
    session = Session.start(GRAPHS / "medical_checkin.yaml", model=model)
    session.send("Hi")
    session.send("What is this about?")
    first, second = model.requests
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user", "system"]
    assert first.messages[0] == second.messages[0]  # the cacheable prefix is identical
    system = second.messages[0]["content"]
    order = [
        "You are Ava",
        "Never give a diagnosis",
        "# Conversation: medical_checkin",
        "Objective: Greet the patient",
        "Never discuss billing",
        "`medication_adherence_check`",
        "Answer with one JSON object",
    ]
    positions = [system.index(text) for text in order]
    assert positions == sorted(positions)
    assert '"Yes, I\'m ready."' in system  # exit examples are shown as hints
    assert "Known facts: red_flags=[], nitro_used=false" in second.messages[-1]["content"]


def test_reflection_and_decision_prompts_carry_the_topology_and_notes() -> None:
    script = {
        "welcome_patient": [go("medication_adherence_check")],
        "medication_adherence_check": [go("vasodilator_check")],
        "vasodilator_check": [go("check_chest_pain")],
        "check_chest_pain": [go("check_shortness_of_breath")],
        "check_shortness_of_breath": [go("recall_patient_history")],
        "reflect_on_session_data": [
            {"note": "NOTE-1", "exit": "determine_exercise_clearance", "reason": "r"}
        ],
        "determine_exercise_clearance": [
            {"exit": "summarize_recommendations_approved", "reason": "r"}
        ],
        "summarize_recommendations_approved": [stay("Cleared.")],
    }
    model = ScriptedModel(script)
    session = Session.start(GRAPHS / "medical_checkin.yaml", model=model)
    session.send("ready, took all, no nitro, no pain, breathing fine")
    reflection = model.requests_for("reflect_on_session_data")[0]
    decision = model.requests_for("determine_exercise_clearance")[0]
    assert (
        "[R] reflect_on_session_data -> [D] determine_exercise_clearance"
        in reflection.messages[0]["content"]
    )
    assert "Weigh red flags (none) against" in reflection.messages[0]["content"]
    assert "abstract topology" in decision.messages[0]["content"]
    assert "NOTE-1" in decision.messages[-1]["content"]
    assert decision.schema["required"] == ["exit", "reason"]


def test_token_estimate_and_window() -> None:
    assert estimate_tokens("x" * 40) == 14
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "w" * 80} for i in range(10)
    ]
    assert history_start(messages, 0, 1000) == 0  # 10 × 24 tokens fit
    start = history_start(messages, 0, 100)
    assert messages[start]["role"] == "user" and sum(24 for _ in messages[start:]) <= 75
    assert history_start(messages, start, 100) == start  # stays put while it fits
    huge = [{"role": "user", "content": "x" * 4000}]
    assert history_start(huge, 0, 100) == 0  # the newest message is always kept


def test_overrides_without_blocks_replace_the_system_part_only() -> None:
    variables = _variables()
    messages = render_messages(
        "decision", variables, [], {"decision": "MY SYSTEM for {{ state_id }}"}
    )
    assert messages[0]["content"] == "MY SYSTEM for d"
    assert "Choose the exit" in messages[-1]["content"]


@pytest.mark.parametrize(
    "override",
    [
        "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}",
        "{{ 'a' * 10**9 }}",
        "{{ 1/0 }}",
    ],
    ids=["nested-loop", "huge-string", "zero-division"],
)
def test_an_override_that_fails_or_runs_away_is_a_bounded_render_error(override: str) -> None:
    with pytest.raises(RenderError) as raised:
        render_messages("decision", _variables(), [], {"decision": override})
    assert raised.value.cause


def _variables() -> dict[str, object]:
    from cgraph.spec.model import Agent

    return {
        "kind": "decision",
        "agent": Agent(),
        "graph": {"name": "g", "description": ""},
        "state_id": "d",
        "state": {"objective": "o", "decision_guidelines": []},
        "exits": [],
        "allow_stay": False,
        "topology": "",
        "memories": [],
        "notes": [],
        "variables": {},
        "dropped": 0,
        "entered_this_turn": False,
        "message": "",
        "has_memories": False,
        "memory_count": 0,
    }


def test_shipped_templates_exist_for_every_kind(tmp_path: Path) -> None:
    from cgraph.runtime.ask.prompts import TEMPLATES

    assert {p.stem for p in TEMPLATES.glob("*.j2")} >= {
        "action",
        "decision",
        "reflection",
        "start",
        "extract",
    }


def test_every_kinds_shipped_template_compiles_ahead_of_its_first_use() -> None:
    prompts._shipped.cache_clear()
    prompts.compile_shipped()
    kinds = ("action", "decision", "extract", "reflection", "start")  # not the partials
    assert prompts._shipped.cache_info().currsize == len(kinds)
    for kind in kinds:
        prompts._shipped(kind)
    assert prompts._shipped.cache_info().misses == len(kinds)  # none compiled again
