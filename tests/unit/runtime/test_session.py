"""Sessions: whole conversations, undo, resume, cancel, memory hooks, history windows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import InputError, LLMError, SessionCompleted, SessionError
from cgraph.runtime.ports import NewMemory
from cgraph.session import Session, Sessions
from tests.conftest import GRAPHS
from tests.unit.runtime._runtime import FakeMemory, action, go, graph, pick, simple, stay

MEDICAL = GRAPHS / "medical_checkin.yaml"


def medical_script(cleared: bool) -> dict[str, Any]:
    return {
        "welcome_patient": [stay("Hello, ready?"), go("medication_adherence_check", "ready")],
        "medication_adherence_check": [stay("Meds?"), go("assess_medication_impact", "missed")],
        "assess_medication_impact": [stay("When?"), go("note_medication_concern", "timing known")],
        "vasodilator_check": [stay("Nitro?"), go("check_chest_pain", "no nitro")],
        "check_chest_pain": [
            stay("Chest pain?"),
            go("check_shortness_of_breath" if cleared else "flag_chest_pain", "answered"),
        ],
        "check_shortness_of_breath": [stay("Breathless?"), go("recall_patient_history", "fine")],
        "reflect_on_session_data": [
            {"note": "flags noted", "exit": "determine_exercise_clearance", "reason": "done"}
        ],
        "determine_exercise_clearance": [
            pick(
                "summarize_recommendations_approved"
                if cleared
                else "summarize_recommendations_disqualified",
                "per the flags",
            )
        ],
        "summarize_recommendations_approved": [stay("Cleared."), go("patient_questions")],
        "summarize_recommendations_disqualified": [stay("Skip today."), go("patient_questions")],
        "patient_questions": [stay("Questions?"), go("end_session", "none")],
        "end_session": [stay("Goodbye!"), go("END", "bye", reply="Take care.")],
    }


USER = [
    "Hi",
    "Yes, I'm ready.",
    "I forgot my beta blocker.",
    "Yesterday morning.",
    "No, I didn't need it.",
    "I had some pressure in my chest.",
    "No, breathing is fine.",
    "Okay, I understand.",
    "No, that's all.",
    "Bye.",
]


@pytest.mark.parametrize("cleared", [False, True])
def test_a_whole_medical_check_in(tmp_path: Path, cleared: bool) -> None:
    model = ScriptedModel(medical_script(cleared))
    session = Session.start(MEDICAL, model=model, store=tmp_path)
    turns = [session.send(text) for text in USER]
    assert session.completed and turns[-1].completed and turns[-1].reply == "Take care."
    assert (
        model.unused() == {"summarize_recommendations_approved": 2}
        if not cleared
        else {"summarize_recommendations_disqualified": 2}
    )
    assert session.variables["red_flags"] == ([] if cleared else ["chest pain"])
    assert session.variables["medication_concern"] is True  # noted, not a red flag
    summary = turns[6]
    assert summary.path == (
        "check_shortness_of_breath",
        "recall_patient_history",
        "reflect_on_session_data",
        "determine_exercise_clearance",
        "summarize_recommendations_" + ("approved" if cleared else "disqualified"),
    )
    assert summary.llm_calls == 4  # exit, reflection, decision, the new state's reply
    assert [t.llm_calls for t in turns if len(t.path) == 1] == [1] * sum(
        len(t.path) == 1 for t in turns
    )  # every turn that stays costs exactly one call
    assert session.view.notes == ("flags noted",)
    disqualified = model.requests_for("summarize_recommendations_disqualified")
    if not cleared:
        assert "findings (chest pain)" in disqualified[0].messages[0]["content"]
    assert len(session.audit) == sum(len(t.transitions) for t in turns)
    with pytest.raises(SessionCompleted):
        session.send("hello?")


def test_resume_continues_with_the_same_state_transcript_and_audit(tmp_path: Path) -> None:
    session = Session.start(MEDICAL, model=ScriptedModel(medical_script(True)), store=tmp_path)
    for text in USER[:4]:
        session.send(text)
    session.close()
    script = medical_script(True)
    script["vasodilator_check"] = [go("check_chest_pain", "no nitro")]
    again = Session.resume(session.id, store=tmp_path, model=ScriptedModel(script))
    assert again.state == "vasodilator_check" and again.view.turn_number == 4
    assert again.transcript == session.transcript and again.audit == session.audit
    assert again.variables == {
        "red_flags": [],
        "nitro_used": False,
        "medication_concern": True,
    }
    assert again.send("No.").state == "check_chest_pain"


def test_resume_refuses_another_graph_or_one_without_the_current_state(tmp_path: Path) -> None:
    session = Session.start(MEDICAL, model=ScriptedModel(medical_script(True)), store=tmp_path)
    session.send(USER[0])
    session.close()
    other = GRAPHS / "restaurant_reservation.yaml"
    with pytest.raises(SessionError, match="runs graph `medical_checkin`, not `restaurant_"):
        Session.resume(session.id, store=tmp_path, graph=other, model=ScriptedModel({}))
    edited = simple(name="medical_checkin", start="a", body=action("a", {"END": "Done."}))
    with pytest.raises(SessionError, match=f"is in state `{session.state}`, which graph"):
        Session.resume(session.id, store=tmp_path, graph=graph(tmp_path, edited), model="x")


def test_undo_takes_back_the_last_turn(tmp_path: Path) -> None:
    memory = FakeMemory()
    script = medical_script(True) | {"extract": {"memories": [{"tier": "personal", "text": "m"}]}}
    session = Session.start(MEDICAL, model=ScriptedModel(script), store=tmp_path, memory=memory)
    for text in USER[:4]:
        session.send(text)
    before = (session.state, session.variables, len(session.transcript), len(session.audit))
    assert before[0] == "vasodilator_check" and session.variables["medication_concern"] is True
    taken = session.undo()
    assert taken is not None and taken.number == 4 and taken.user == "Yesterday morning."
    assert session.state == "assess_medication_impact"
    assert session.variables["medication_concern"] is False
    assert len(session.transcript) == before[2] - 2 and len(session.audit) < before[3]
    assert memory.deleted == ["n3"]  # the memory stored in the undone turn
    assert [e.kind for e in session.events()].count("undo") == 1
    again = Session.resume(session.id, store=tmp_path, model=ScriptedModel(medical_script(True)))
    assert again.state == "assess_medication_impact" and again.transcript == session.transcript


def test_undo_twice_and_on_a_fresh_session(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"END": "bye"})))
    session = Session.start(spec, model=ScriptedModel({"a": stay("hi")}))
    assert session.undo() is None
    session.send("one")
    session.send("two")
    assert session.undo() is not None and session.undo() is not None
    assert session.view.turn_number == 0 and session.transcript == []
    assert session.send("three").number == 1


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so nothing catches it."""


def test_an_interrupted_turn_is_finished_on_resume_without_repeating_steps(tmp_path: Path) -> None:
    text = simple(
        body=action("a", {"n": "Go."})
        + """\
  n:
    type: annotation
    objective: Count.
    set: {count: "{{ count + 1 }}"}
    next_state: b
"""
        + action("b", {"END": "x"}),
        top="variables: {count: 0}\n",
    )
    spec = graph(tmp_path, text)
    model = ScriptedModel({"a": [stay("hi"), go("n")], "b": [Crash()]})
    session = Session.start(spec, model=model, store=tmp_path)
    session.send("hi")
    with pytest.raises(Crash):
        session.send("go")
    # The annotation's step only moved: it is committed with b's, which the crash cut.
    assert session.view.interrupted == "go" and session.variables == {"count": 0}
    with pytest.raises(SessionError, match="interrupted"):
        session.send("again")
    resumed = Session.resume(session.id, store=tmp_path, model=ScriptedModel({"b": stay("in b")}))
    recovered = resumed.recovered
    assert recovered is not None and recovered.reply == "in b" and recovered.path == ("a", "n", "b")
    assert resumed.variables == {"count": 1}  # the annotation step was applied once
    assert resumed.view.interrupted is None


def test_ctrl_c_cancels_the_turn_cleanly(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"b": "Go."}) + action("b", {"END": "x"})))
    model = ScriptedModel({"a": [stay("hi"), go("b")], "b": [KeyboardInterrupt()]})
    session = Session.start(spec, model=model, store=tmp_path)
    session.send("hi")
    with pytest.raises(KeyboardInterrupt):
        session.send("go")
    view = session.view
    assert view.state == "a" and view.interrupted is None and view.turn_number == 1
    assert [m["content"] for m in session.transcript] == ["hi", "hi"]
    stored = Session.resume(session.id, store=tmp_path, model=ScriptedModel({}))
    assert stored.state == "a" and stored.recovered is None


MEMORY_GRAPH = """\
memory: {{store: {mode}}}
cgraph: 1
name: m
start: a
states:
""" + action("a", {"END": "The user says bye."}, included_contexts="[personal]")


@pytest.mark.parametrize("mode", ["every_turn", "session_end", "off"])
def test_memories_are_extracted_per_the_graphs_setting(tmp_path: Path, mode: str) -> None:
    memory = FakeMemory(["likes tea"])
    extract = {"memories": [{"tier": "personal", "text": "Has a cat."}]}
    model = ScriptedModel({"a": [stay("hi"), go("END", reply="bye")], "extract": extract})
    session = Session.start(
        graph(tmp_path, MEMORY_GRAPH.format(mode=mode)), model=model, memory=memory, user_id="ann"
    )
    first = session.send("I have a cat")
    last = session.send("bye")
    calls = {"every_turn": (1, 1), "session_end": (0, 1), "off": (0, 0)}[mode]
    assert (first.memory_calls, last.memory_calls) == calls
    assert first.llm_calls == 1  # extraction is counted apart from the turn's own call
    assert len(memory.added) == sum(calls)
    if memory.added:
        item = memory.added[0]
        assert isinstance(item, NewMemory) and item.text == "Has a cat." and item.tier == "personal"
    assert [m.text for m in first.recalled] == ["likes tea"]  # included_contexts
    assert memory.queries[0] == ("ann", ["I have a cat"], ("personal",))


def test_memories_a_crash_kept_from_being_stored_are_stored_on_resume(tmp_path: Path) -> None:
    extracted = {"memories": [{"tier": "personal", "text": "Has a cat."}]}

    def die(request: object) -> dict[str, object]:
        raise RuntimeError("the process died after the turn, before extraction")

    script = {"a": stay("hi"), "extract": extracted}
    spec = graph(tmp_path, MEMORY_GRAPH.format(mode="every_turn"))
    dying = ScriptedModel({"a": stay("hi"), "extract": die})
    session = Session.start(spec, model=dying, memory=FakeMemory(), store=tmp_path)
    with pytest.raises(RuntimeError):
        session.send("I have a cat")
    memory = FakeMemory()
    again = Session.resume(session.id, store=tmp_path, model=ScriptedModel(script), memory=memory)
    assert again.view.turn_number == 1 and again.transcript[-1]["content"] == "hi"
    assert [m.text for m in memory.added] == ["Has a cat."]
    Session.resume(session.id, store=tmp_path, model=ScriptedModel(script), memory=memory)
    assert len(memory.added) == 1  # extracted once, not on every resume


def test_a_failing_memory_add_is_logged_and_the_session_goes_on(tmp_path: Path) -> None:
    model = ScriptedModel(
        {"a": stay("hi"), "extract": {"memories": [{"tier": "task", "text": "x"}]}}
    )
    memory = FakeMemory()
    memory.fail = True
    session = Session.start(
        graph(tmp_path, MEMORY_GRAPH.format(mode="every_turn")), model=model, memory=memory
    )
    turn = session.send("hello")
    assert turn.reply == "hi"
    assert {e.data.get("operation") for e in session.events() if e.kind == "memory_error"} >= {
        "recall",
        "add",
    }


def test_history_is_bounded_by_tokens_and_the_oldest_turns_are_dropped(tmp_path: Path) -> None:
    spec = graph(
        tmp_path, simple(body=action("a", {"END": "bye"}), top="limits: {history_tokens: 200}\n")
    )
    model = ScriptedModel({"a": stay("short reply")})
    session = Session.start(spec, model=model)
    for number in range(12):
        session.send(f"message {number} " + "word " * 40)
    messages = model.requests[-1].messages
    history = [m for m in messages if m["role"] != "system"]
    assert history[-1]["content"].startswith("message 11") and history[0]["role"] == "user"
    assert sum(len(m["content"]) // 4 + 4 for m in history) <= 200
    assert not any(m["content"].startswith("message 0 ") for m in history)
    assert "oldest messages of this conversation are no longer shown" in messages[-1]["content"]


def test_graph_prompt_overrides_replace_blocks(tmp_path: Path) -> None:
    text = simple(body=action("a", {"END": "bye"})) + (
        'prompts:\n  action: |\n    {% extends "action.j2" %}\n'
        "    {% block answer %}CUSTOM ANSWER FORMAT{% endblock %}\n"
    )
    model = ScriptedModel({"a": stay("hi")})
    Session.start(graph(tmp_path, text), model=model).send("hello")
    system = model.requests[0].messages[0]["content"]
    assert "CUSTOM ANSWER FORMAT" in system and "Objective of a." in system
    assert "Answer with one JSON object" not in system


def test_sessions_are_listed_per_store(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"END": "bye"})))
    for user in ("ann", "bob"):
        Session.start(
            spec, model=ScriptedModel({"a": stay("hi")}), store=tmp_path, user_id=user
        ).send("x")
    found = Session.list_sessions(tmp_path, user_id="ann")
    assert [(i.user_id, i.turn, i.state) for i in found] == [("ann", 1, "a")]
    assert len(Session.list_sessions(tmp_path)) == 2


def test_store_argument_forms(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"END": "bye"})))
    model = ScriptedModel({"a": stay("hi")})
    assert isinstance(Session.start(spec, model=model).store, InMemorySessionStore)
    assert isinstance(Session.start(spec, model=model, store=tmp_path / "s").store, SQLiteStore)
    assert (tmp_path / "s" / "sessions.sqlite").is_file()


def test_a_reply_can_be_had_before_its_memories_are_extracted(tmp_path: Path) -> None:
    extract = {"memories": [{"tier": "personal", "text": "Has a cat."}]}
    model = ScriptedModel({"a": [stay("hi"), stay("again")], "extract": [extract, extract]})
    memory = FakeMemory()
    spec = graph(tmp_path, MEMORY_GRAPH.format(mode="every_turn"))
    session = Session.start(spec, model=model, memory=memory, store=tmp_path)
    first = session.send("I have a cat", remember=False)
    assert first.reply == "hi" and first.memory_calls == 0 and memory.added == []
    remembered = session.extract_memories()
    assert remembered is not None and remembered.memory_calls == 1 and len(memory.added) == 1
    assert session.extract_memories() is None  # once per turn
    session.send("and a dog", remember=False)
    session.close()  # what is due is extracted before the store closes
    assert len(memory.added) == 2 and session.turns()[-1].memory_calls == 1


@pytest.mark.parametrize(
    "message", ["hi \ud800", "hi \udcff", "nul \x00", "x" * 8_001, b"bytes", None, 3]
)
def test_a_message_that_cannot_be_stored_is_refused_before_the_turn_begins(
    tmp_path: Path, message: Any
) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"END": "bye"})))
    session = Session.start(spec, model=ScriptedModel({"a": stay("Hi.")}), store=tmp_path / "s")
    before = session.events()
    with pytest.raises(InputError) as refused:
        session.send(message)
    assert refused.value.message.startswith("the message ")
    assert session.events() == before and session.view.turn_number == 0
    assert session.send("x" * 8_000).reply == "Hi."  # at the cap is fine


@pytest.mark.parametrize(
    ("extract", "cause"),
    [
        ([LLMError("the server is down"), LLMError("the server is down")], "the server is down"),
        (["not json", "still not json"], "the answer is not valid JSON"),
    ],
)
def test_a_failed_memory_extraction_is_one_warning_worded_as_such(
    tmp_path: Path, extract: list[Any], cause: str
) -> None:
    model = ScriptedModel({"a": stay("hi"), "extract": extract})
    spec = graph(tmp_path, MEMORY_GRAPH.format(mode="every_turn"))
    turn = Session.start(spec, model=model, memory=FakeMemory(), store=tmp_path).send(
        "I have a cat"
    )
    assert turn.reply == "hi" and not turn.fallback  # the turn itself was answered
    (warning,) = turn.warnings
    assert warning.startswith("memory extraction after this turn failed (the reply stands): ")
    assert cause in warning and "the model failed in" not in warning


def test_a_turn_that_can_never_be_finished_is_dropped_once_on_resume(tmp_path: Path) -> None:
    spec = graph(tmp_path, simple(body=action("a", {"b": "Go."}) + action("b", {"END": "x"})))
    model = ScriptedModel({"a": [stay("hi"), RuntimeError("a bug in cgraph")]})
    session = Session.start(spec, model=model, store=tmp_path)
    session.send("hi")
    with pytest.raises(RuntimeError):
        session.send("go")
    assert session.view.interrupted == "go"
    again = ScriptedModel({"a": [RuntimeError("the same bug")]})
    resumed = Session.resume(session.id, store=tmp_path, model=again)
    assert resumed.recovered is None and resumed.view.interrupted is None
    assert resumed.dropped is not None and "RuntimeError: the same bug" in resumed.dropped
    assert resumed.view.turn_number == 1  # as before the message
    third = Session.resume(session.id, store=tmp_path, model=ScriptedModel({"a": stay("yes")}))
    assert third.dropped is None and third.send("go").reply == "yes"


def test_the_next_reply_never_waits_for_the_last_extraction(tmp_path: Path) -> None:
    import threading

    from tests.unit.runtime._runtime import FakeMemory

    release = threading.Event()

    class Slow(ScriptedModel):
        def complete(self, request: Any) -> str:
            if request.kind == "extract":
                release.wait(5)
                return '{"memories": [{"tier": "personal", "text": "walks daily"}]}'
            return super().complete(request)

    text = simple(body=action("a", {"END": "x"}), top="memory: {store: every_turn}\n")
    model = Slow({"a": stay("ok")})
    sessions = Sessions(memory=FakeMemory(), model=model, remember="background")
    session = sessions.start(graph(tmp_path, text))
    session.send("I walk every day")  # the hook asks in the background
    turn = session.send("hello", remember=False)  # the first extraction has not answered
    assert turn.reply == "ok" and turn.memory_calls == 0
    assert not [e for e in session.log.events() if e.kind.startswith("memory")]
    session.remember()  # the front end runs the hook once the reply is shown
    release.set()
    session.close()  # waits for both, stores what they found, each logged for its turn
    stored = [e for e in session.events() if e.kind == "memory_stored"]
    assert [(e.turn, e.data["turn"]) for e in stored] == [(2, 1), (2, 2)]
