"""Hand-offs (`handoff: true`): the state an exit leads to reads the message that took it,
as said to it. A desk hands its hub a request it does not handle and the hub routes it
again on the same turn; a hub hands a desk the request it answers; a message is handed to
a state at most once a turn."""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.ports import LLMRequest
from cgraph.session import Sessions
from cgraph.testing.runner import Options, Runner
from tests.conftest import FIXTURES
from tests.unit.runtime._runtime import go, stay

DESK = FIXTURES / "handoff"


def _said(request: LLMRequest) -> str:
    return "\n".join(str(m["content"]) for m in request.messages)


def test_the_help_desk_routes_again_offline_and_with_a_scripted_model() -> None:
    files = [DESK / "help_desk.test.yaml", DESK / "help_desk.scripted.test.yaml"]
    results = Runner(Options()).run_paths(files)
    failed = [(r.file.name, run.case.name) for r in results for run in r.runs if not run.passed]
    assert failed == [] and all(not r.problems and r.runs for r in results)


def test_a_desk_hands_back_a_request_it_does_not_handle_and_the_hub_routes_it(
    tmp_path: Path,
) -> None:
    session = Sessions(tmp_path).start(DESK / "help_desk.yaml")
    session.send("I want to change my seat.")
    turn = session.send("Actually, is my flight on time?")
    assert turn.path == ("seats", "triage", "status", "triage")
    moves = [e.data for e in session.log.events() if e.kind == "transition"][-3:]
    assert [m.get("hands_off", False) for m in moves] == [True, False, False]
    assert "on time" in turn.reply and session.view.variables.get("seat") is None


def test_a_handed_state_is_asked_to_decide_from_the_message_and_a_plain_one_to_start(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        {
            "triage": [go("seats"), go("status"), stay("Anything else?")],
            "seats": [stay("Which seat?"), go("triage")],
        }
    )
    session = Sessions(tmp_path, model=model).start(DESK / "help_desk.yaml")
    session.send("I'd like another seat.")
    assert session.send("Is my flight on time?").path == ("seats", "triage", "status", "triage")
    handed, plain = (_said(r) for r in model.requests_for("triage")[1:])
    assert "`seats` has handed the user's last message to `triage` unanswered" in handed
    assert "has just moved into `triage`" in plain and "has handed" not in plain
    assert "`triage` has handed the user's last message to `seats`" in _said(
        model.requests_for("seats")[0]
    )


def test_a_message_is_handed_to_each_state_at_most_once_a_turn(tmp_path: Path) -> None:
    # Two states that hand a message to each other: the second hand-off to `seats` enters
    # it as any exit would, so it starts its own work instead of passing it on again.
    model = ScriptedModel(
        {"triage": [go("seats"), go("seats")], "seats": [go("triage"), stay("Which seat?")]}
    )
    session = Sessions(tmp_path, model=model).start(DESK / "help_desk.yaml")
    turn = session.send("Hello?")
    assert turn.path == ("triage", "seats", "triage", "seats") and turn.reply == "Which seat?"
    assert "has just moved into `seats`" in _said(model.requests_for("seats")[1])
    moves = [e.data for e in session.log.events() if e.kind == "transition"]
    assert [m.get("hands_off", False) for m in moves[1:]] == [True, True, False]
