"""`Sessions` (one store's sessions, opened by one path), the `Session` turn handle, its
frozen `SessionView`, its `SessionLog`, the after-turn memory hook's two policies and the
deprecated names the first guide published."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import ConfigError, NotTheOwner, SessionNotFound
from cgraph.runtime.ports import LLMRequest, Memory
from cgraph.runtime.turn.after import policy_of
from cgraph.session import Session, Sessions, SessionView
from tests.unit.runtime._runtime import FakeMemory, action, go, graph, simple, stay

TWO = simple(body=action("a", {"b": "on"}) + action("b", {"END": "done"}))
REMEMBERS = simple(body=action("a", {"END": "x"}), top="memory: {store: every_turn}\n")
MEMORY = '{"memories": [{"tier": "personal", "text": "walks daily"}]}'


def test_start_and_resume_open_the_same_session_by_one_path(tmp_path: Path) -> None:
    path = graph(tmp_path, TWO)
    sessions = Sessions(tmp_path, model=ScriptedModel({"a": [stay("hi"), go("b")], "b": stay("b")}))
    session = sessions.start(path, user_id="ann", session_id="s1")
    session.send("hello")
    session.send("move on")
    again = Sessions(tmp_path, model=ScriptedModel({})).resume("s1")
    assert (again.id, again.user_id) == ("s1", "ann")
    shown = ("state", "turn_number", "completed", "variables", "transcript", "summary")
    assert [getattr(again.view, f) for f in shown] == [getattr(session.view, f) for f in shown]
    assert again.log.turns() == session.log.turns()
    assert [i.id for i in sessions.list("ann")] == ["s1"] and sessions.list("bob") == []
    assert sessions.info("s1").turn == 2


def test_the_view_is_a_frozen_copy_taken_when_asked(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("b")], "b": stay("at b")})
    session = Sessions(model=model).start(graph(tmp_path, TWO))
    before = session.view
    before.variables["x"] = 1  # a copy: the session does not see it
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.state = "b"  # type: ignore[misc]
    session.send("hello")
    session.send("on")
    after = session.view
    assert isinstance(after, SessionView) and "x" not in after.variables
    assert (before.state, before.turn_number) == ("a", 0)
    assert (after.state, after.turn_number, len(after.transcript)) == ("b", 2, 4)
    assert after.current_state is not None and after.current_state.type == "action"
    assert after.state_spec("a") is not None and after.state_spec("nowhere") is None


def test_info_and_delete_refuse_another_users_session_and_forget_its_task_memories(
    tmp_path: Path,
) -> None:
    memory = Filtered()
    sessions = Sessions(tmp_path, memory=memory, model=ScriptedModel({"a": stay("hi")}))
    session = sessions.start(graph(tmp_path, TWO), user_id="ann")
    memory.items = [
        Memory("t1", "mine", "task", "ann", session.id, "a", 1, 0.0),
        Memory("t2", "another session's", "task", "ann", "other", "a", 1, 0.0),
        Memory("p1", "kept", "personal", "ann", session.id, "a", 1, 0.0),
    ]
    with pytest.raises(NotTheOwner):
        sessions.info(session.id, user_id="bob")
    with pytest.raises(NotTheOwner):
        sessions.delete(session.id, user_id="bob")
    sessions.delete(session.id, user_id="ann")
    assert memory.deleted == ["t1"]
    with pytest.raises(SessionNotFound):
        sessions.info(session.id)


class Filtered(FakeMemory):
    def list(self, user_id, *, tiers=(), session_id=None):  # type: ignore[no-untyped-def]
        return [
            m
            for m in self.items
            if (not tiers or m.tier in tiers) and session_id in (None, m.session_id)
        ]


class Held(ScriptedModel):
    """Answers the `extract` question only once `release` is set."""

    def __init__(self, script: dict[str, Any], release: threading.Event) -> None:
        super().__init__(script)
        self.release = release

    def complete(self, request: LLMRequest) -> str:
        if request.kind == "extract":
            assert self.release.wait(5)
            return MEMORY
        return super().complete(request)


def test_the_now_policy_extracts_before_send_returns(tmp_path: Path) -> None:
    release = threading.Event()
    release.set()
    sessions = Sessions(memory=FakeMemory(), model=Held({"a": stay("ok")}, release))
    turn = sessions.start(graph(tmp_path, REMEMBERS)).send("I walk every day")
    assert turn.memory_calls == 1


def test_the_background_policy_returns_first_and_takes_the_answer_in_later(tmp_path: Path) -> None:
    release = threading.Event()
    memory = FakeMemory()
    model = Held({"a": stay("ok")}, release)
    session = Sessions(memory=memory, model=model, remember="background").start(
        graph(tmp_path, REMEMBERS)
    )
    turn = session.send("I walk every day")  # returns while the question is still asked
    assert turn.reply == "ok" and turn.memory_calls == 0 and memory.added == []
    release.set()
    assert session.extract_memories() is None  # taken in (logged for turn 1), nothing due now
    stored = [e for e in session.log.events() if e.kind == "memory_stored"]
    assert [e.data["turn"] for e in stored] == [1]
    assert [m.text for m in memory.added] == ["walks daily"]  # type: ignore[attr-defined]


def test_an_unknown_policy_names_the_two() -> None:
    with pytest.raises(ConfigError, match="now, background"):
        policy_of("later")


def test_the_published_names_still_work_and_warn(tmp_path: Path) -> None:
    path = graph(tmp_path, TWO)
    with pytest.warns(DeprecationWarning, match=r"Sessions\(store, …\)\.start"):
        session = Session.start(path, model=ScriptedModel({"a": stay("hi")}), store=tmp_path)
    session.send("hello")
    with pytest.warns(DeprecationWarning, match="view.state"):
        assert session.state == "a"
    with pytest.warns(DeprecationWarning, match=r"log\.turns\(\)"):
        assert [t.reply for t in session.turns()] == ["hi"]
    with pytest.warns(DeprecationWarning, match=r"log\.events\(\)"):
        assert session.events(after=0, limit=1)[0].seq == 1
    with pytest.warns(DeprecationWarning):
        assert session.variables == {} and session.transcript[-1]["content"] == "hi"
    with pytest.warns(DeprecationWarning):
        assert session.current_state() is not None and not session.completed
    with pytest.warns(DeprecationWarning, match=r"Sessions\(store, …\)\.info"):
        assert Session.stored(session.id, store=tmp_path).turn == 1
    with pytest.warns(DeprecationWarning, match=r"Sessions\(store, …\)\.resume"):
        again = Session.resume(session.id, store=tmp_path, model=ScriptedModel({}))
    assert again.view.turn_number == 1


@pytest.mark.slow  # a real PostgreSQL server
def test_a_turn_on_a_served_postgresql_store_commits_on_the_loop_with_no_hop_to_a_worker(
    pg_url: str, tmp_path: Path
) -> None:
    import asyncio
    from concurrent.futures import Executor, Future

    from cgraph.backends.store.postgres import PostgresStore

    class Counted(Executor):
        def __init__(self) -> None:
            self.jobs = 0

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            self.jobs += 1
            done: Future[Any] = Future()
            done.set_result(fn(*args, **kwargs))
            return done

    store, pool = PostgresStore(pg_url), Counted()
    model = ScriptedModel({"a": [stay("hi"), go("b")], "b": stay("at b")})
    session = Sessions(store, model=model).start(graph(tmp_path, TWO), session_id="s1")

    async def turns() -> list[str]:
        store.serve_on(asyncio.get_running_loop())
        try:
            return [(await session.asend(text, pool=pool)).reply for text in ("hello", "on")]
        finally:
            await store.aclose()

    assert asyncio.run(turns()) == ["hi", "at b"]
    assert pool.jobs == 0  # every commit awaited on the loop, none run in the pool
    again = Sessions(PostgresStore(pg_url, pool_size=1), model=model).resume("s1")
    assert (again.view.state, again.view.turn_number) == ("b", 2)
    store.close()
