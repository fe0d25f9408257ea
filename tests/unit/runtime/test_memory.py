"""The memory gateway: a failing store never takes a turn down."""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import RECALL, FakeMemory, action, graph, pick, simple, stay


def test_a_failing_memory_store_is_logged_and_the_turn_goes_on(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi")]})
    session = Session.start(graph(tmp_path, RECALL), model=model, memory=FakeMemory(fail=True))
    turn = session.send("pets")
    assert turn.reply == "hi" and turn.recalled == ()
    errors = [e for e in session.events() if e.kind == "memory_error"]
    assert errors and "chroma is down" in errors[0].data["error"]


def test_a_conditional_start_with_a_failing_memory_store_treats_the_user_as_new(
    tmp_path: Path,
) -> None:
    text = simple(
        start="\n  - {when: new user, state: a}\n  - {when: returning user, state: b}",
        body=action("a", {"END": "x"}) + action("b", {"END": "x"}),
        top="memory: {store: off}\n",
    )
    model = ScriptedModel({"start": [pick("a", "new")], "a": [stay("hello")]})
    session = Session.start(graph(tmp_path, text), model=model, memory=FakeMemory(fail=True))
    turn = session.send("hello")
    assert turn.state == "a" and turn.reply == "hello"
    assert model.requests[0].has_memories is False
    assert "they are new" in model.requests[0].messages[-1]["content"]
    errors = [e.data for e in session.events() if e.kind == "memory_error"]
    assert [(e["operation"], e["error"]) for e in errors] == [
        ("count", "RuntimeError: cannot count")
    ]


def test_the_gateway_turns_every_store_failure_into_one_kind_of_event() -> None:
    from cgraph.runtime.memory.gateway import MemoryGateway
    from cgraph.runtime.needs import drive
    from cgraph.spec.model import MemoryConfig

    gateway = MemoryGateway(FakeMemory(fail=True), MemoryConfig(), user_id="ann", session_id="s")
    recalled = drive(gateway.recall("a", ["tea"], ("personal",), 3))
    known, counted = drive(gateway.metadata())
    extracted = drive(gateway.store_extracted(None, 2, (), "a", 1))
    failures = [*recalled.events, *counted, *extracted, *drive(gateway.forget(["m1"]))]
    assert recalled.memories == () and known == {"has_memories": False, "memory_count": 0}
    assert {e.kind for e in failures} == {"memory_error"}
    assert [e.data["operation"] for e in failures] == ["recall", "count", "extract", "delete"]
    assert failures[0].data["error"] == "chroma is down"  # the store's own message
    assert failures[1].data["error"] == "RuntimeError: cannot count"
