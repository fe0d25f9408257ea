"""Flows that keep their slots straight: a sub-graph's slots live in its frame (`with:`,
`returns:`, `reset:`), interruptions come back (`resume: true`, `RESUME`), a collect state
is left only once its slots are filled (unless the exit is early), a `when:` exit is a
business rule, the reply shows the values as corrected, and a correction the designer
wants confirmed is asked about first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import go, write


def actions(graph: str) -> str:
    """`graph` with the texts every action state must have (not what these tests read)."""
    texts = (
        "    actions: [Do the work.]\n    intra_state_navigation_guidelines: [Stay.]\n"
        "    action_guidelines: [Be brief.]\n    boundary_constraints: [Never guess.]\n"
    )
    return graph.replace("    type: action\n", "    type: action\n" + texts)


def answer(reply: str = "", exit_id: str = "stay", **slots: Any) -> dict[str, Any]:
    return {"exit": exit_id, "reason": "scripted", "reply": reply, "slots": slots}


PIZZA = """\
cgraph: 1
name: pizza
start: ask_quantity
slots:
  quantity: {type: integer, minimum: 1}
  handle: {type: string, confirm_correction: true}
states:
  ask_quantity:
    type: action
    objective: Learn how many pizzas.
    collect: [quantity]
    say: "How many pizzas?"
    exit_conditions:
      - when: quantity > 10
        next_state: too_many
      - description: The customer confirms the order.
        next_state: confirm
      - description: The customer gives up.
        next_state: END
        early: true
  too_many:
    type: action
    objective: Say the kitchen cannot make that many.
    say: "Sorry, {{ quantity }} is too many."
    exit_conditions:
      - description: The customer is done.
        next_state: END
  confirm:
    type: action
    objective: Confirm the order.
    say: "So that's {{ quantity }} pizza(s) for {{ handle }}. Shall I place it?"
    exit_conditions:
      - description: The customer is done.
        next_state: END
"""


def _pizza(tmp_path: Path, script: dict[str, Any]) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel(script)
    return Session.start(write(tmp_path, actions(PIZZA)), model=model), model


def test_a_when_exit_that_holds_wins_over_the_described_choice(tmp_path: Path) -> None:
    script = {"ask_quantity": [answer(exit_id="confirm", quantity=12)], "too_many": answer("!")}
    session, _ = _pizza(tmp_path, script)
    turn = session.send("Twelve pizzas, that's it")
    assert turn.path == ("ask_quantity", "too_many")
    assert "`when: quantity > 10` holds" in turn.transitions[-1].reason


def test_an_exit_waits_for_the_slots_its_state_collects(tmp_path: Path) -> None:
    leaves = answer(exit_id="confirm")
    asks = answer("How many would you like?")
    session, model = _pizza(tmp_path, {"ask_quantity": [leaves, asks]})
    turn = session.send("Sounds good")
    assert (turn.state, turn.reply) == ("ask_quantity", "How many would you like?")
    assert any("waits until `quantity` is given" in w for w in turn.warnings)
    prompt = model.requests_for("ask_quantity")[0].messages[0]["content"]
    assert "Still missing: `quantity`" in prompt and "[early]" in prompt
    assert "None" not in turn.reply


def test_an_early_exit_leaves_before_the_slots_are_filled(tmp_path: Path) -> None:
    session, _ = _pizza(tmp_path, {"ask_quantity": [go("END", reply="Bye.")]})
    assert session.send("forget it").completed


@pytest.mark.parametrize("early", [True, False])
def test_a_when_exit_that_says_early_is_taken_before_the_slots_are_filled(
    tmp_path: Path, early: bool
) -> None:
    # Two slots collected together: the rule reads the first, the second is still missing.
    graph = PIZZA.replace("collect: [quantity]", "collect: [quantity, handle]").replace(
        "next_state: too_many", f"next_state: too_many\n        early: {str(early).lower()}"
    )
    model = ScriptedModel(
        {"ask_quantity": answer("Your handle?", quantity=12), "too_many": answer("!")}
    )
    session = Session.start(write(tmp_path, actions(graph)), model=model)
    turn = session.send("Twelve pizzas")
    assert session.variables["quantity"] == 12 and session.variables.get("handle") is None
    if early:
        assert turn.path == ("ask_quantity", "too_many")
        assert "`when: quantity > 10` holds" in turn.transitions[-1].reason
    else:  # it waits for the handle, as every exit of a collecting state does
        assert (turn.path, turn.state) == (("ask_quantity",), "ask_quantity")


def test_a_chooser_that_reads_messages_itself_stays_when_an_exit_waits(tmp_path: Path) -> None:
    from cgraph.runtime.ports import Choice, Question, Reason

    class Eager:
        name = "eager"

        def choose(self, question: Question) -> Choice:
            return Choice("confirm", Reason("eager"))

    session = Session.start(write(tmp_path, actions(PIZZA)), model=Eager())
    turn = session.send("yes")
    assert (turn.state, turn.reply) == ("ask_quantity", "How many pizzas?")
    assert turn.decisions[-1].chosen == "stay" and "waits" in turn.decisions[-1].reason


def test_the_reply_shows_the_value_as_corrected_this_turn(tmp_path: Path) -> None:
    graph = PIZZA.replace("handle: {type: string, confirm_correction: true}", "handle: {}")
    graph = graph.replace('say: "How many pizzas?"', 'say: "How many pizzas for {{ handle }}?"')

    class Reads:
        name = "reads"

        def choose(self, question: Any) -> Any:
            from cgraph.runtime.ports import STAY, Choice, Reason

            handle = question.user_messages[-1].split()[-1]
            return Choice(STAY, Reason("reads"), slots={"handle": handle})

    session = Session.start(write(tmp_path, actions(graph)), model=Reads())
    assert session.send("I am @sam").reply == "How many pizzas for @sam?"
    assert session.send("sorry, I am @sammy").reply == "How many pizzas for @sammy?"


@pytest.mark.parametrize(("said", "kept"), [("yes", "@sammy"), ("no", "@sam")])
def test_a_correction_the_designer_wants_confirmed_is_asked_first(
    tmp_path: Path, said: str, kept: str
) -> None:
    settles = {"exit": "change" if said == "yes" else "keep", "reason": "scripted", "reply": ""}
    script = {
        "ask_quantity": [
            answer("How many?", handle="@sam"),
            answer("How many?", handle="@sammy"),
            settles,
        ]
    }
    session, _ = _pizza(tmp_path, script)
    session.send("I'm @sam")
    asked = session.send("it's @sammy actually")
    assert asked.reply == "Change handle from @sam to @sammy?"
    assert session.variables["handle"] == "@sam"
    settled = session.send(said)
    assert session.variables["handle"] == kept and settled.reply == "How many pizzas?"
    corrected = [e.data for e in session.events() if e.kind == "slots" and e.data["corrected"]]
    assert bool(corrected) is (said == "yes")


def test_a_confirmed_correction_says_its_correction_reply_with_the_new_value(
    tmp_path: Path,
) -> None:
    said = 'correction_reply: "Ok, updating the {{ slot }} from {{ old }} to {{ new }}."'
    graph = PIZZA.replace("confirm_correction: true}", "confirm_correction: true, " + said + "}")
    settles = {"exit": "change", "reason": "scripted", "reply": ""}
    script = {
        "ask_quantity": [
            answer("How many?", handle="@sam"),
            answer("How many?", handle="@sammy"),
            settles,
        ]
    }
    model = ScriptedModel(script)
    session = Session.start(write(tmp_path, actions(graph)), model=model)
    session.send("I'm @sam")
    assert session.send("it's @sammy actually").reply == "Change handle from @sam to @sammy?"
    settled = session.send("yes")
    assert settled.reply == "Ok, updating the handle from @sam to @sammy. How many pizzas?"


# ----- slots that belong to their graph, and interruptions that come back -----------------

MAIN = """\
cgraph: 1
name: travel
start: ask_trip
slots:
  destination: {type: string}
global_exits:
  - description: The user asks about baggage rules.
    next_state: baggage
    resume: true
states:
  ask_trip:
    type: action
    objective: Learn what the user wants.
    say: "Where to?"
    exit_conditions:
      - description: The user wants to book a flight.
        next_state: book
  book:
    type: graph
    objective: Book the flight.
    graph: flight.yaml
    with:
      seats: "{{ 2 }}"
    exit_conditions:
      - next_state: booked
  booked:
    type: action
    objective: Say it is booked.
    say: "Booked to {{ destination }}."
    exit_conditions:
      - description: The user is done.
        next_state: END
  baggage:
    type: action
    objective: Answer about baggage.
    say: "One bag of 23 kg is included."
    exit_conditions:
      - description: The user has no more baggage questions.
        next_state: RESUME
"""
FLIGHT = """\
cgraph: 1
name: flight
start: ask_destination
returns: [destination]
slots:
  destination: {type: string}
  seats: {type: integer, default: 1}
  note: {type: string}
states:
  ask_destination:
    type: action
    objective: Learn the destination.
    collect: [destination]
    say: "Where would you like to fly, for {{ seats }} seat(s)?"
    exit_conditions:
      - next_state: ask_note
  ask_note:
    type: action
    objective: Take a note.
    reset: [note]
    say: "Any note?"
    exit_conditions:
      - description: The user is done with notes.
        next_state: END
"""


def _travel(tmp_path: Path, script: dict[str, Any]) -> tuple[Session, ScriptedModel]:
    write(tmp_path, actions(FLIGHT), "flight.yaml")
    model = ScriptedModel(script)
    return Session.start(write(tmp_path, actions(MAIN), "travel.yaml"), model=model), model


def test_the_message_that_enters_a_sub_graph_fills_its_first_collecting_state(
    tmp_path: Path,
) -> None:
    inner = "flight.yaml#ask_destination"
    script = {
        "ask_trip": [go("book")],
        inner: [answer("Tokyo it is.", destination="Tokyo")],
        "flight.yaml#ask_note": answer("Any note?"),
    }
    session, model = _travel(tmp_path, script)
    turn = session.send("I want to book a flight to Tokyo")
    assert turn.state == "flight.yaml#ask_note" and turn.reply == "Any note?"
    asked = model.requests_for(inner)[0]
    assert asked.options == () and asked.asked.opening  # only its slots: no exit to take


def test_slots_passed_in_returned_and_dropped(tmp_path: Path) -> None:
    inner = "flight.yaml#ask_destination"
    script = {
        "ask_trip": [go("book")],
        inner: [answer("Where to?"), answer("Lima.", destination="Lima")],
        "flight.yaml#ask_note": [answer("Any note?"), go("END")],
        "booked": answer("Booked."),
    }
    session, _ = _travel(tmp_path, script)
    session.send("a flight please")
    assert session.variables["seats"] == 2  # passed in with `with:`
    session.send("Lima")
    session.send("no notes")
    assert session.state == "booked"
    assert session.variables["destination"] == "Lima" and "seats" not in session.variables


def test_an_interruption_comes_back_to_where_it_left(tmp_path: Path) -> None:
    inner = "flight.yaml#ask_destination"
    script = {
        "ask_trip": [go("book")],
        inner: [answer("Where to?"), go("baggage"), answer("Where to, then?")],
        "baggage": [answer("One bag of 23 kg is included."), go("RESUME")],
    }
    session, _ = _travel(tmp_path, script)
    session.send("a flight please")
    off = session.send("how many bags can I take?")
    assert off.state == "baggage" and off.interrupted == (inner,)
    assert off.reply == "One bag of 23 kg is included."
    back = session.send("ok thanks, that's all about bags")
    assert back.state == inner and back.interrupted == ()
    assert back.reply == "Where to, then?"


# ----- an unset slot is no text --------------------------------------------------------

UNSET = """\
cgraph: 1
name: unset
start: ask
slots:
  quantity: {type: integer}
  handle: {type: string}
states:
  ask:
    type: action
    objective: Learn how many pizzas {{ handle }} wants.
    actions: ["Ask {{ handle }} how many pizzas ({{ quantity }} so far)."]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    say: "So that's {{ quantity }} pizza(s) for {{ handle }}."
    exit_conditions:
      - description: The customer is done.
        next_state: note
  note:
    type: annotation
    objective: Note the order.
    set: {order: "{{ quantity }} for {{ handle }}", count: "{{ quantity }}"}
    say: "Noted: {{ order }}."
    next_state: END
variables:
  order: ""
  count: 0
"""


def test_an_unset_slot_renders_as_no_text_offline(tmp_path: Path) -> None:
    session = Session.start(write(tmp_path, UNSET))
    turn = session.send("hello")
    assert turn.reply == "So that's  pizza(s) for ." and "None" not in turn.reply


def test_an_unset_slot_renders_as_no_text_in_the_prompt_and_set(tmp_path: Path) -> None:
    model = ScriptedModel({"ask": [go("note")]})
    session = Session.start(write(tmp_path, UNSET), model=model)
    turn = session.send("that's all")
    prompt = model.requests_for("ask")[0].messages[0]["content"]
    assert "Ask  how many pizzas ( so far)." in prompt and "None" not in prompt
    assert turn.reply == "Noted:  for ." and session.variables["order"] == " for "
    assert session.variables["count"] is None  # a lone `{{ quantity }}` is a value: null


# ----- reset: ------------------------------------------------------------------------

AGAIN = """\
cgraph: 1
name: again
start: ask_size
slots:
  size: {type: string, enum: [small, large]}
  extra: {type: string, default: none}
states:
  ask_size:
    type: action
    objective: Learn the size.
    reset: [size, extra]
    collect: [size]
    say: "Which size?"
    exit_conditions:
      - next_state: confirm
  confirm:
    type: action
    objective: Confirm the size.
    say: "A {{ size }} one?"
    exit_conditions:
      - description: The customer wants to start over.
        next_state: ask_size
      - description: The customer confirms.
        next_state: END
"""


def test_reset_clears_slots_each_time_the_state_is_entered(tmp_path: Path) -> None:
    script = {
        "ask_size": [answer("Which size?", size="large", extra="cheese"), answer("Which size?")],
        "confirm": [answer("A large one?"), go("ask_size")],
    }
    model = ScriptedModel(script)
    session = Session.start(write(tmp_path, actions(AGAIN)), model=model)
    assert session.send("a large one with cheese").state == "confirm"
    assert session.variables["extra"] == "cheese"
    again = session.send("start over")
    # Without `reset:` the filled `size` would pass `ask_size` straight back to `confirm`.
    assert (again.state, again.reply) == ("ask_size", "Which size?")
    assert session.variables["size"] is None and session.variables["extra"] == "none"


DETOUR = """\
cgraph: 1
name: detour
start: ask_name
slots:
  handle: {type: string, confirm_correction: true}
  name: {type: string}
states:
  ask_name:
    type: action
    objective: Learn the name.
    collect: [name]
    say: "And the name of {{ handle }}?"
    exit_conditions:
      - description: The user wants to remove another contact first.
        next_state: remove_first
        early: true
        resume: true
      - next_state: END
  remove_first:
    type: annotation
    objective: Remove the other contact.
    say: "Removed."
    next_state: RESUME
"""


def test_an_interruptions_values_are_no_answer_to_the_state_it_interrupts(
    tmp_path: Path,
) -> None:
    detour = {**go("remove_first"), "slots": {"handle": "@bob"}}  # the detour's handle
    model = ScriptedModel({"ask_name": [detour, answer("And the name of @sam?")]})
    graph = write(tmp_path, actions(DETOUR))
    session = Session.start(graph, model=model, variables={"handle": "@sam"})
    turn = session.send("Actually, first remove @bob.")
    assert turn.path == ("ask_name", "remove_first", "ask_name")
    assert turn.reply == "Removed. And the name of @sam?"
    assert session.variables["handle"] == "@sam"


HOURS = """\
cgraph: 1
name: hours
start: ask_party_size
slots:
  party_size: {type: integer, minimum: 1, maximum: 12}
states:
  ask_party_size:
    type: action
    objective: Find out how many people are coming.
    collect: [party_size]
    say: How many of you will there be?
    exit_conditions:
      - description: The guest asks when the restaurant is open.
        examples: ["When are you open?", "What are your opening hours?", "Are you open on Sunday?"]
        next_state: opening_hours
        early: true
        resume: true
      - next_state: booked
  opening_hours:
    type: annotation
    objective: Tell the guest the opening hours.
    say: We are open every day from noon to 11 pm.
    next_state: RESUME
  booked:
    type: annotation
    objective: Confirm the booking.
    say: A table for {{ party_size }}, booked.
    next_state: END
"""


@pytest.mark.parametrize(
    ("said", "path"),
    [
        ("We are 3", ("ask_party_size", "booked")),  # an answer, however near the aside
        ("Are you open at 5?", ("ask_party_size", "opening_hours", "ask_party_size")),
        ("Are you open on Sunday?", ("ask_party_size", "opening_hours", "ask_party_size")),
    ],
)
def test_offline_a_slot_answer_beats_an_early_aside_and_a_question_does_not(
    tmp_path: Path, said: str, path: tuple[str, ...]
) -> None:
    session = Session.start(write(tmp_path, actions(HOURS)), model="semantic")
    assert session.send(said).path == path
