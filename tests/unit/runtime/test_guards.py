"""The guards an outcome passes before it is applied: declared moves and loop limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.needs import drive
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, graph, simple, stay, two_actions

LOOP = simple(
    start="a",
    body=action("a", {"x": "Loop."})
    + """\
  x:
    type: annotation
    objective: Ping.
    next_state: y
  y:
    type: annotation
    objective: Pong.
    next_state: x
""",
    top="limits: {max_transitions_per_turn: 5}\n",
)


def test_max_transitions_per_turn_stops_in_the_last_user_facing_state(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("x")]})
    session = Session.start(graph(tmp_path, LOOP), model=model)
    session.send("hi")
    turn = session.send("loop")
    assert turn.guard == "max_transitions_per_turn" and turn.state == "a"
    assert turn.reply == "Do the work of a."  # no fallback written: the authored text
    assert len(turn.transitions) == 5
    guards = [e.data for e in session.events() if e.kind == "guard"]
    assert guards[0]["guard"] == "max_transitions_per_turn" and guards[0]["stopped_in"] == "a"


@pytest.mark.parametrize("where", ["state", "limits"])
def test_max_visits_guard(tmp_path: Path, where: str) -> None:
    own = {"max_visits": "2"} if where == "state" else {}
    top = "limits: {max_visits: {b: 2}}\n" if where == "limits" else ""
    text = simple(
        body=action("a", {"b": "Go to b."}, fallback="Let's stay here.")
        + action("b", {"a": "Back to a."}, **own),
        top=top,
    )
    model = ScriptedModel({"a": go("b"), "b": go("a")})  # ping-pong forever
    session = Session.start(graph(tmp_path, text), model=model)
    turn = session.send("go")
    assert turn.guard == "max_visits" and turn.reply == "Let's stay here." and turn.state == "a"
    assert sum(t.to_state == "b" for t in turn.transitions) == 2
    guard = [e.data for e in session.events() if e.kind == "guard"]
    assert [(g["guard"], g["at"], g["stopped_in"]) for g in guard] == [("max_visits", "a", "a")]


def test_max_reflections_guard(tmp_path: Path) -> None:
    text = simple(
        body=action("a", {"r": "Think."})
        + """\
  r:
    type: reflection
    objective: Think.
    exit_conditions:
      - {description: Think more., next_state: r}
      - {description: Done., next_state: a}
""",
        top="limits: {max_reflections: 2}\n",
    )
    model = ScriptedModel(
        {"a": [stay("hi"), go("r")], "r": {"note": "n", "exit": "r", "reason": "more"}}
    )
    session = Session.start(graph(tmp_path, text), model=model)
    session.send("hi")
    turn = session.send("think")
    assert turn.guard == "max_reflections" and turn.state == "a"
    assert len(model.requests_for("r")) == 2 and session.view.notes == ("n", "n")
    guard = [e.data for e in session.events() if e.kind == "guard"]
    assert [(g["guard"], g["at"], g["stopped_in"]) for g in guard] == [
        ("max_reflections", "r", "a")
    ]
    assert turn.reply == "Do the work of a."  # the authored text; the note is never shown


def test_an_undeclared_move_is_never_applied_even_if_a_handler_asks(tmp_path: Path) -> None:
    from cgraph.runtime.state.outcomes import Move

    session = Session.start(two_actions(tmp_path), model=ScriptedModel({"a": [stay("hi")]}))
    session.send("hi")
    engine = session._engine
    drive(engine.begin("tampered"))
    applied = engine.applier.apply(engine.state, Move("a", "a", "not declared here", "forced"))
    assert applied.done
    engine._take(applied)
    drive(engine._commit())
    assert session.state == "a" and session.audit[-1].to_state == "a"
    assert len(session.audit) == 1  # only the start: the forced move was not recorded
    guard = [e.data for e in session.events() if e.kind == "guard"][-1]
    assert guard["guard"] == "undeclared_transition" and "not declared" in guard["detail"]


def test_max_turns_leads_a_state_that_keeps_asking_to_its_on_limit(tmp_path: Path) -> None:
    # `max_visits` counts entries: a state that stays is never entered again.
    text = simple(
        body=action("a", {"b": "Go to b."}, max_turns="3", on_limit="human")
        + action("b", {"END": "Done."})
        + action("human", {"END": "Done."}),
    )
    model = ScriptedModel({"a": stay("Which one?"), "human": stay("A person will help.")})
    session = Session.start(graph(tmp_path, text), model=model)
    turns = [session.send(m) for m in ("hi", "hmm", "not sure", "still not sure")]
    assert [t.state for t in turns] == ["a", "a", "a", "human"]
    assert [t.guard for t in turns] == [None, None, None, "max_turns"]  # routed, not stopped
    assert turns[3].reply == "A person will help."
    assert turns[3].transitions[0].reason == "max_turns: `a` answered 3 turns in a row already"
    assert [e.data["routed_to"] for e in session.events() if e.kind == "guard"] == ["human"]


def test_max_turns_without_on_limit_stops_each_turn_past_it(tmp_path: Path) -> None:
    text = simple(body=action("a", {"END": "Done."}, max_turns="1", fallback="Let's pause."))
    session = Session.start(graph(tmp_path, text), model=ScriptedModel({"a": stay("Which?")}))
    first, second = session.send("hi"), session.send("hmm")
    assert (first.guard, first.reply) == (None, "Which?")
    assert (second.guard, second.reply, second.state) == ("max_turns", "Let's pause.", "a")


def test_leaving_and_coming_back_counts_the_turns_afresh(tmp_path: Path) -> None:
    text = simple(
        body=action("a", {"b": "Go to b."}, max_turns="2", on_limit="b")
        + action("b", {"a": "Back to a."})
    )
    answers = [stay("1"), stay("2"), go("b"), stay("3"), stay("4")]
    model = ScriptedModel({"a": answers, "b": [stay("in b"), go("a")]})
    session = Session.start(graph(tmp_path, text), model=model)
    states = [session.send(m).state for m in ("hi", "hm", "go", "back", "hm")]
    assert states == ["a", "a", "b", "a", "a"]
