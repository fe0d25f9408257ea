"""Sessions and memory tiers: a session recalls its own task context and the user's
lasting memories; a turn's memories are stored exactly once, even across a crash.

Real Chroma (in-process, or on disk where a session is resumed) and the real embedding
model; a scripted model answers the turns and the `extract` questions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.memory.chroma import ChromaMemory, memory_folder
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory
from cgraph.session import Session
from tests.unit.runtime._runtime import action, graph, stay

SCOPED = """\
cgraph: 1
name: {name}
start: a
memory: {{store: every_turn, min_score: -1, top_k: 10}}
states:
""" + action("a", {"END": "The user says bye."}, included_contexts="[personal, project, task]")

TOLD = {
    "memories": [
        {"tier": "task", "text": "Today Ann felt dizzy when she stood up."},
        {"tier": "personal", "text": "Ann is allergic to penicillin."},
    ]
}
NOTHING: dict[str, Any] = {"memories": []}


def model(*extracts: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel({"a": stay("noted"), "extract": list(extracts) or NOTHING})


def recalled(session: Session, message: str) -> set[str]:
    return {m.text for m in session.send(message).recalled}


@pytest.fixture(scope="module")
def embedder() -> Any:
    found = shared_embedder()
    assert found.wait(120)
    return found


def test_a_session_recalls_its_task_context_and_another_session_does_not(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    first_graph = graph(tmp_path, SCOPED.format(name="checkin"), "checkin.yaml")
    other_graph = graph(tmp_path, SCOPED.format(name="companion"), "companion.yaml")
    first = Session.start(
        first_graph, model=model(TOLD), memory=memory, user_id="ann", store=tmp_path
    )
    assert recalled(first, "I felt dizzy today") == set()
    assert recalled(first, "Still dizzy") == {t["text"] for t in TOLD["memories"]}
    allergy = {"Ann is allergic to penicillin."}
    for name, spec in (("same graph", first_graph), ("another graph", other_graph)):
        other = Session.start(spec, model=model(), memory=memory, user_id="ann", store=tmp_path)
        assert recalled(other, "Am I dizzy?") == allergy, name
        assert {m.text for m in other.memories()} == allergy
        assert {m.text for m in other.memories("dizzy")} == allergy
    again = Session.resume(first.id, store=tmp_path, model=model(), memory=memory)
    assert recalled(again, "Dizzy again") == {t["text"] for t in TOLD["memories"]}


class DiesAfterStoring:
    """The store a process used when it was killed: the memories reached the store, and
    the process died before the session logged that they had."""

    def __init__(
        self, inner: MemoryStore, death: type[BaseException] | None = None, times: int = -1
    ) -> None:
        self.inner, self.death, self.times = inner, death or Killed, times

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def add(self, user_id: str, items: Any) -> list[Memory]:
        stored = self.inner.add(user_id, items)
        if self.times == 0:
            return stored
        self.times -= 1
        raise self.death


class Killed(BaseException):
    """SIGKILL, as far as the dying session can tell: nothing after it runs."""


def test_memories_stored_before_a_crash_are_logged_on_resume_not_extracted_again(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    spec = graph(tmp_path, SCOPED.format(name="checkin"))
    dying = Session.start(
        spec, model=model(TOLD), memory=DiesAfterStoring(memory), user_id="ann", store=tmp_path
    )
    with pytest.raises(Killed):
        dying.send("I felt dizzy today")
    reworded = {"memories": [{"tier": "task", "text": "Ann was lightheaded on standing."}]}
    asked = model(reworded)
    resumed = Session.resume(dying.id, store=tmp_path, model=asked, memory=memory)
    assert [r.kind for r in asked.requests] == []  # the extract question was not asked again
    stored = memory.list("ann")
    assert sorted(m.text for m in stored) == sorted(t["text"] for t in TOLD["memories"])
    [event] = [e for e in resumed.events() if e.kind == "memory_stored"]
    assert {m["id"] for m in event.data["memories"]} == {m.id for m in stored}
    assert event.data["calls"] == 0 and event.data["recovered"] is True
    assert resumed.undo() is not None and memory.list("ann") == []  # the log knows their ids


def test_a_session_resumed_without_finishing_still_logs_what_the_store_took(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    spec = graph(tmp_path, SCOPED.format(name="checkin"))
    dying = Session.start(
        spec, model=model(TOLD), memory=DiesAfterStoring(memory), user_id="ann", store=tmp_path
    )
    with pytest.raises(Killed):
        dying.send("I felt dizzy today")
    asked = model(TOLD, TOLD)
    resumed = Session.resume(dying.id, store=tmp_path, model=asked, memory=memory, finish=False)
    assert resumed.extract_memories() is not None
    resumed.send("And my knee hurts")  # a turn of this process: extracted as usual
    assert [r.kind for r in asked.requests] == ["action", "extract"]
    assert len([m for m in memory.list("ann") if m.turn == 1]) == 2


def test_an_extraction_interrupted_after_storing_is_not_asked_again(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    spec = graph(tmp_path, SCOPED.format(name="checkin"))
    asked = model(TOLD, TOLD)
    once = DiesAfterStoring(memory, KeyboardInterrupt, times=1)  # Ctrl-C, just after storing
    session = Session.start(spec, model=asked, memory=once, user_id="ann", store=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        session.send("I felt dizzy today")
    assert session.view.turn_number == 1  # the turn itself was done: only extraction was cut short
    assert session.extract_memories() is not None
    assert [r.kind for r in asked.requests] == ["action", "extract"]
    assert len(memory.list("ann")) == 2


def test_a_crash_before_the_store_took_anything_asks_again_once(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    spec = graph(tmp_path, SCOPED.format(name="checkin"))

    def killed(request: object) -> dict[str, Any]:
        raise Killed

    dying = ScriptedModel({"a": stay("noted"), "extract": killed})
    session = Session.start(spec, model=dying, memory=memory, user_id="ann", store=tmp_path)
    with pytest.raises(Killed):
        session.send("I felt dizzy today")
    asked = model(TOLD)
    Session.resume(session.id, store=tmp_path, model=asked, memory=memory)
    Session.resume(session.id, store=tmp_path, model=asked, memory=memory)
    assert [r.kind for r in asked.requests] == ["extract"]
    assert sorted(m.text for m in memory.list("ann")) == sorted(t["text"] for t in TOLD["memories"])


def test_a_recovered_turn_is_not_fooled_by_other_turns_or_sessions(
    tmp_path: Path, embedder: Any
) -> None:
    memory = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    spec = graph(tmp_path, SCOPED.format(name="checkin"))
    memory.add("ann", [NewMemory("Ann keeps a cat.", "personal", "elsewhere", "a", 2)])

    def killed(request: object) -> dict[str, Any]:
        raise Killed

    dying = ScriptedModel({"a": stay("noted"), "extract": [TOLD, killed]})
    session = Session.start(spec, model=dying, memory=memory, user_id="ann", store=tmp_path)
    session.send("I felt dizzy today")  # turn 1: its memories stored and logged
    with pytest.raises(Killed):
        session.send("I walked the dog")  # turn 2: killed while extracting
    walked = {"memories": [{"tier": "task", "text": "Ann walked the dog this morning."}]}
    asked = model(walked)
    Session.resume(session.id, store=tmp_path, model=asked, memory=memory)
    assert [r.kind for r in asked.requests] == ["extract"]
    assert {(m.text, m.turn) for m in memory.list("ann") if m.session_id == session.id} == {
        ("Today Ann felt dizzy when she stood up.", 1),
        ("Ann is allergic to penicillin.", 1),
        ("Ann walked the dog this morning.", 2),
    }
