"""The turn loop: a turn stays or moves, commits, and ends at a reply or END."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.turn.replies import GOODBYE
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, graph, simple, stay, two_actions


def test_a_turn_that_stays_costs_one_call_and_offers_exit_ids_stay_and_clarify(
    tmp_path: Path,
) -> None:
    model = ScriptedModel({"a": [stay("Hello!")]})
    session = Session.start(two_actions(tmp_path), model=model)
    turn = session.send("hi")
    assert (turn.reply, turn.llm_calls, turn.state, turn.path) == ("Hello!", 1, "a", ("a",))
    model.assert_exit_enum("a", ["b", "END", "stay", "clarify"])
    assert model.requests[0].allow_stay and model.requests[0].entered_this_turn


def test_an_exit_asks_the_new_state_at_once(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("Hello!"), go("b", "ready")], "b": [stay("In b now.")]})
    session = Session.start(two_actions(tmp_path), model=model)
    session.send("hi")
    turn = session.send("I'm ready")
    assert (turn.reply, turn.state, turn.path, turn.llm_calls) == ("In b now.", "b", ("a", "b"), 2)
    assert [(t.from_state, t.to_state, t.exit_id, t.reason) for t in turn.transitions] == [
        ("a", "b", "b", "ready")
    ]
    first, second = model.requests[1:]
    assert not first.entered_this_turn and second.entered_this_turn
    assert turn.transitions[0].description == "The user is ready."


def test_reaching_end_completes_the_session(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("Hello!"), go("END", "bye", reply="Goodbye!")]})
    session = Session.start(two_actions(tmp_path), model=model)
    session.send("hi")
    turn = session.send("bye")
    assert turn.completed and session.completed and turn.reply == "Goodbye!"
    assert turn.transitions[-1].to_state == "END"
    with pytest.raises(Exception, match="reached END at turn 2"):
        session.send("hello again")


def test_the_turn_that_reaches_end_always_has_a_reply(tmp_path: Path) -> None:
    text = simple(
        body=action("a", {"b": "The user is done."})
        + action("b", {"END": "The user says bye."}, say="Goodbye, {{ user_id }}!")
    )
    # `b` entered and left in one turn: its closing was never shown, so it is the reply.
    model = ScriptedModel({"a": [go("b")], "b": [go("END")]})
    turn = Session.start(graph(tmp_path, text), model=model, user_id="ann").send("done, bye")
    assert turn.completed and turn.reply == "Goodbye, ann!" and turn.state == "b"
    # `b` spoke on an earlier turn: its `say:` is not said again; the user's last message
    # is answered with a plain goodbye.
    model = ScriptedModel({"a": [go("b")], "b": [stay("Take care."), go("END")]})
    session = Session.start(graph(tmp_path, text), model=model, user_id="ann")
    assert session.send("done").reply == "Take care."
    last = session.send("bye")
    assert last.completed and last.reply == GOODBYE
    assert session.transcript[-1] == {"role": "assistant", "content": GOODBYE}
    assert "when you take `END`" in model.requests_for("b")[-1].messages[0]["content"]
    assert "when you take `END`" not in model.requests_for("a")[0].messages[0]["content"]


def test_an_ending_state_with_nothing_to_say_says_goodbye(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("Hello!"), go("END")]})
    session = Session.start(two_actions(tmp_path), model=model)
    session.send("hi")
    assert session.send("bye").reply == GOODBYE
