"""The flow stack as a ported flow needs it: an interruption opened inside a sub-graph is
closed when that sub-graph ends without going back, the state a `RESUME` takes up again
checks its `when:` rules on that turn and knows it was resumed (`resumed`)."""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import go, stay, write
from tests.unit.runtime.test_flow_slots import actions

HUB = """\
cgraph: 1
name: hub
start: hub
states:
  hub:
    type: action
    objective: Offer the form.
    say: What would you like to do?
    exit_conditions:
      - description: The user wants to fill in the form.
        next_state: form
  form:
    type: graph
    objective: Fill in the form.
    graph: form.yaml
    next_state: after
  after:
    type: action
    objective: Offer more help.
    say: Anything else?
    exit_conditions:
      - description: The user is done.
        next_state: END
"""

FORM = """\
cgraph: 1
name: form
start: ask_name
states:
  ask_name:
    type: action
    objective: Learn the name.
    say: Your name?
    exit_conditions:
      - description: The user asks what the form is for.
        next_state: explain
        resume: true
      - description: The user gives their name.
        next_state: END
  explain:
    type: annotation
    objective: Explain the form, then stop it.
    say: It is for the newsletter; let's stop here.
    next_state: END
"""


def test_an_interruption_opened_in_a_sub_graph_is_closed_when_it_ends(tmp_path: Path) -> None:
    write(tmp_path, actions(FORM), "form.yaml")
    model = ScriptedModel(
        {
            "hub": [go("form")],
            "ask_name": [stay("Your name?"), go("explain")],
            "after": [stay("Anything else?")] * 2,
        }
    )
    session = Session.start(write(tmp_path, actions(HUB)), model=model)
    turn = session.send("I want to fill in the form")
    assert turn.state == "form.yaml#ask_name"
    turn = session.send("What is this form for?")
    assert turn.path == ("form.yaml#ask_name", "form.yaml#explain", "form", "after")
    assert turn.interrupted == ()  # nothing to go back to: the form is over
    assert session.send("Hmm").interrupted == ()


def test_an_interruption_that_ends_the_session_leaves_nothing_open(tmp_path: Path) -> None:
    model = ScriptedModel({"ask_name": [go("explain")]})
    session = Session.start(write(tmp_path, actions(FORM)), model=model)
    turn = session.send("What is this form for?")
    assert turn.completed and turn.path == ("ask_name", "explain")
    assert turn.interrupted == ()


SEND = """\
cgraph: 1
name: send
start: confirm
slots:
  amount: {type: number}
  ok: {type: boolean}
states:
  confirm:
    type: action
    objective: Confirm the transfer.
    collect: [ok]
    say: "{% if resumed %}Back to the transfer. {% endif %}Send ${{ amount }}?"
    exit_conditions:
      - description: The user wants to change the amount.
        examples: ["Change the amount.", "I want to send a different amount."]
        next_state: change
        early: true
        resume: true
      - when: amount > 100
        next_state: too_much
      - when: ok
        next_state: END
  change:
    type: annotation
    objective: Change the amount.
    set: {amount: 500}
    next_state: RESUME
  too_much:
    type: annotation
    objective: Refuse it.
    say: That is over your limit.
    next_state: END
"""


def test_a_state_a_resume_takes_up_again_checks_its_rules_on_that_turn(tmp_path: Path) -> None:
    model = ScriptedModel({"confirm": [go("change"), stay("")]})
    graph = write(tmp_path, actions(SEND))
    session = Session.start(graph, model=model, variables={"amount": 50})
    turn = session.send("Make it 500.")
    # `ok` is still to be collected, but `amount > 100` reads only what the detour changed.
    assert turn.path == ("confirm", "change", "confirm", "too_much")
    assert turn.completed and turn.reply == "That is over your limit."


def test_resumed_says_the_state_was_taken_up_again_this_turn(tmp_path: Path) -> None:
    graph = write(tmp_path, actions(SEND.replace("amount: 500", "amount: 80")))
    session = Session.start(graph, model="semantic", variables={"amount": 50})
    turn = session.send("Change the amount.")
    assert turn.path == ("confirm", "change", "confirm")
    assert turn.reply == "Back to the transfer. Send $80?"
    assert session.send("Hmm.").reply == "Send $80?"  # a new turn in the same state


def test_a_correction_is_checked_by_the_rules_on_its_own_turn(tmp_path: Path) -> None:
    corrected = {**stay("Send $500?"), "slots": {"amount": 500}}
    model = ScriptedModel({"confirm": [corrected]})
    graph = write(tmp_path, actions(SEND))
    session = Session.start(graph, model=model, variables={"amount": 50})
    turn = session.send("Actually, 500.")
    assert turn.path == ("confirm", "too_much") and turn.reply == "That is over your limit."
