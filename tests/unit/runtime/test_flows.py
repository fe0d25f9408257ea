"""The three ported flows, each in a scripted conversation: offline (the semantic model,
no LLM) and with the scripted model answering as an LLM would (slots in the same answer
that picks the exit). Each conversation exercises what the flow needs: slots filled up
front or corrected, `when` branches, global exits, `on_limit`, `say:` on silent states,
`speaks_first` and reply metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.state.records import Turn
from cgraph.session import Session
from tests.conftest import GRAPHS

RESTAURANT = GRAPHS / "restaurant_reservation.yaml"
TRANSFER = GRAPHS / "money_transfer.yaml"
INTAKE = GRAPHS / "patient_intake.yaml"


def talk(session: Session, messages: Sequence[str]) -> list[Turn]:
    return [session.send(message) for message in messages]


def events(session: Session, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in session.events() if e.kind == kind]


def answer(reply: str = "", exit_id: str = "stay", **slots: Any) -> dict[str, Any]:
    return {"exit": exit_id, "reason": "scripted", "reply": reply, "slots": slots}


# ----- the restaurant reservation ---------------------------------------------------------


def test_restaurant_offline_fills_two_steps_up_front_and_books() -> None:
    session = Session.start(RESTAURANT, model="semantic")
    opening = session.opening
    assert opening is not None and opening.user is None
    assert opening.as_json()["user"] is None and opening.metadata == ("booking",)
    assert opening.reply.startswith("Welcome to La Maison!")
    first, booked = talk(session, ["Table for 4 at 7 pm", "Yes, please book it."])
    assert first.path == ("ask_party_size", "ask_time", "check_availability", "confirm")
    assert first.reply == "That's a table for 4 today at 19:00. Shall I book it?"
    assert session.variables["party_size"] == 4 and session.variables["time"] == "19:00"
    assert first.llm_calls == 2  # the first state and the reply of `confirm`: no others
    [checked] = first.effects  # the side-effect state's call, with what it was given
    assert checked["state"] == "check_availability" and checked["status"] == "done"
    assert checked["arguments"] == {"party_size": 4, "time": "19:00", "date": "today"}
    assert checked["result"]["available"] is True and first.tool_calls == ()
    assert [c["tool"] for c in booked.effects] == ["make_booking"]
    assert (
        booked.completed
        and booked.reply == "You're booked — confirmation LM-1900-04. See you today at 19:00!"
    )


def test_restaurant_offline_books_the_day_the_guest_names() -> None:
    session = Session.start(RESTAURANT, model="semantic")
    tomorrow = date.today() + timedelta(days=1)
    first, booked = talk(session, ["A table for 4 tomorrow at 7 pm", "Yes, please book it."])
    assert session.variables["date"] == tomorrow.isoformat()
    assert first.reply == f"That's a table for 4 on {tomorrow} at 19:00. Shall I book it?"
    code = f"LM-{tomorrow:%m%d}-1900-04"
    assert booked.reply == f"You're booked — confirmation {code}. See you on {tomorrow} at 19:00!"


def test_restaurant_offline_offers_other_times_and_takes_a_correction() -> None:
    session = Session.start(RESTAURANT, model="semantic")
    turns = talk(session, ["Two of us.", "At 8pm", "9 pm then", "Actually make it 3 people"])
    assert turns[1].state == "no_availability"
    assert turns[1].reply.startswith("I'm sorry, 20:00 is fully booked. I can offer 19:30 or 21:00")
    assert turns[2].state == "confirm" and session.variables["time"] == "21:00"
    assert turns[3].reply == "That's a table for 3 today at 21:00. Shall I book it?"
    corrections = [e["corrected"] for e in events(session, "slots") if e["corrected"]]
    assert {"time": "20:00"} in corrections and {"party_size": 2} in corrections


def test_restaurant_offline_cancel_is_a_global_exit_that_says_goodbye() -> None:
    session = Session.start(RESTAURANT, model="semantic")
    size, cancelled = talk(session, ["four", "Never mind, forget the booking."])
    assert size.state == "ask_time"
    assert cancelled.completed and cancelled.path == ("ask_time", "cancelled")
    assert cancelled.reply == "No problem — nothing has been booked. Have a lovely day!"


def test_restaurant_large_party_branches_by_when_without_a_model() -> None:
    model = ScriptedModel({"ask_party_size": [answer("Welcome!"), answer("Noted.", party_size=14)]})
    session = Session.start(RESTAURANT, model=model)
    turn = session.send("We are fourteen.")
    assert turn.completed and turn.path == ("ask_party_size", "large_party")
    assert turn.reply.startswith("For parties of more than twelve")
    assert len(model.requests) == 2 and model.unused() == {}


def test_restaurant_with_the_scripted_model_fills_slots_in_the_exit_answer() -> None:
    model = ScriptedModel(
        {
            "ask_party_size": [
                answer("Welcome! How many?"),
                answer("Lovely.", party_size=4, time="19:00"),
            ],
            "confirm": [answer("A table for 4 at 19:00 — shall I book it?"), answer("", "book")],
        }
    )
    session = Session.start(RESTAURANT, model=model)
    assert session.opening is not None and session.opening.reply == "Welcome! How many?"
    first, booked = talk(session, ["Table for 4 at 7 pm", "Yes"])
    assert first.state == "confirm" and first.reply == "A table for 4 at 19:00 — shall I book it?"
    schema = model.requests_for("ask_party_size")[-1].schema["properties"]["slots"]
    assert schema["properties"]["party_size"]["type"] == ["integer", "null"]
    assert booked.completed and "LM-1900-04" in booked.reply
    assert model.unused() == {}


def test_an_invalid_slot_value_is_asked_once_more_then_left_unset() -> None:
    bad = answer("How many?", party_size=80)
    model = ScriptedModel({"ask_party_size": [answer("Welcome!"), bad, bad]})
    session = Session.start(RESTAURANT, model=model)
    turn = session.send("Eighty of us")
    assert turn.state == "ask_party_size" and session.variables["party_size"] is None
    (failure,) = [e for e in events(session, "llm_error")]
    assert "slot `party_size`: `80` is above the maximum 50" in failure["error"]
    assert turn.warnings == (
        "the model failed in ask_party_size: slot `party_size`: `80` is above the maximum 50",
    )
    assert turn.llm_calls == 2


# ----- the money transfer ---------------------------------------------------------------


def test_transfer_offline_too_much_money_is_said_and_asked_again() -> None:
    session = Session.start(TRANSFER, model="semantic")
    over, amount, done = talk(session, ["Send 5000 to Mary", "50", "yes"])
    assert over.path == (
        "ask_recipient",
        "ask_amount",
        "check_funds",
        "insufficient_funds",
        "ask_amount",
    )
    assert over.reply == (
        "You don't have that much money — your balance is $1000.00. "
        "How much would you like to send to Mary?"
    )
    assert amount.reply == "Just to confirm — send $50.00 to Mary?"
    assert done.completed and done.reply.startswith("Done: $50.00 is on its way to Mary")
    assert session.variables["receipt"]["reference"] == "TX-MARY-5000"


def test_transfer_offline_no_cancels_and_a_human_can_be_asked_for_anywhere() -> None:
    session = Session.start(TRANSFER, model="semantic")
    turns = talk(session, ["I want to send money", "jane", "forty dollars", "no"])
    assert session.variables["amount"] == 40.0 and session.variables["final_confirmation"] is False
    assert (
        turns[-1].completed
        and turns[-1].reply == "Okay, I've cancelled the transfer. Nothing was sent."
    )
    other = Session.start(TRANSFER, model="semantic")
    (handed,) = talk(other, ["Can I talk to a real person?"])
    assert handed.completed and handed.path == ("ask_recipient", "handoff")


def test_transfer_with_the_scripted_model_and_a_corrected_amount() -> None:
    model = ScriptedModel(
        {
            "ask_recipient": [answer("Noted.", recipient="Joe", amount=20)],
            "confirm_transfer": [
                answer("Send $20.00 to Joe?"),
                answer("Send $25.00 to Joe?", amount=25),
                {"exit": "change", "reason": "scripted"},
                answer("Sending.", final_confirmation=True),
            ],
        }
    )
    session = Session.start(TRANSFER, model=model)
    turns = talk(session, ["20 dollars to Joe", "make it 25", "yes", "yes"])
    assert turns[0].state == "confirm_transfer"
    assert turns[1].reply == "Change amount from 20 to 25?"  # `confirm_correction`
    assert turns[2].state == "confirm_transfer" and session.variables["amount"] == 25
    assert (
        turns[2].reply == "Ok, updating the amount to $25.00. Just to confirm — send $25.00 to Joe?"
    )
    assert type(session.variables["amount"]) is int  # whole: `${{ amount }}` says $25
    assert {"amount": 20} in [e["corrected"] for e in events(session, "slots")]
    assert turns[3].completed and "TX-JOE-2500" in turns[3].reply


def test_transfer_offline_a_corrected_amount_over_the_balance_is_caught_when_confirmed() -> None:
    session = Session.start(TRANSFER, model="semantic")
    turns = talk(session, ["Send 50 to Mary", "actually make it 6000", "yes"])
    assert turns[1].reply == "Change amount from 50 to 6000?"
    # Checked on the turn the correction is confirmed: no second "Just to confirm".
    assert turns[2].path == ("confirm_transfer", "insufficient_funds", "ask_amount")
    # The slot's `correction_reply` first, with the new value, then the refusal.
    assert turns[2].reply.startswith(
        "Ok, updating the amount to $6000.00. You don't have that much money"
    )


# ----- the patient intake -----------------------------------------------------------------


def test_intake_offline_runs_to_the_end() -> None:
    session = Session.start(INTAKE, model="semantic")
    messages = [
        "It is January 1st, 1983",
        "I take lisinopril 10 mg daily",
        "Yes I do",
        "Penicillin, I get a rash",
        "No conditions",
        "Just a checkup",
        "Yes, that is correct",
    ]
    turns = talk(session, messages)
    assert [t.state for t in turns[:-1]] == [
        "ask_medications",
        "ask_allergies",
        "list_allergies",
        "ask_conditions",
        "ask_visit_reason",
        "confirm_intake",
    ]
    assert (
        turns[-2].reply
        == "Thank you. I have you down for a checkup, with allergies noted. Is that correct?"
    )
    assert turns[-1].completed and turns[-1].metadata == ()


def test_intake_three_wrong_birthdays_route_by_on_limit() -> None:
    session = Session.start(INTAKE, model="semantic")
    turns = talk(session, ["1990-05-05", "5 May 1990", "May 5th 1990"])
    assert turns[0].reply.startswith("Sorry, that date doesn't match our records. To verify")
    last = turns[-1]
    assert last.completed and last.path[-1] == "identity_failed"
    (limit,) = [e for e in events(session, "guard") if e.get("routed_to")]
    assert (limit["guard"], limit["routed_to"]) == ("max_visits", "identity_failed")


def test_intake_emergency_is_offered_in_every_state() -> None:
    session = Session.start(INTAKE, model="semantic")
    verified, emergency = talk(session, ["01/01/1983", "I am having crushing chest pain right now"])
    assert verified.state == "ask_medications"
    assert emergency.completed and emergency.reply.startswith("This sounds like an emergency.")


def test_intake_with_the_scripted_model_lists_global_exits_first() -> None:
    birthday = (date(1983, 1, 1)).isoformat()
    model = ScriptedModel(
        {
            "verify_birthday": [
                answer("Your date of birth?"),
                answer("Thanks.", birthday=birthday),
            ],
            "ask_medications": [answer("Which medications?"), answer("", "ask_allergies")],
            "ask_allergies": [answer("Any allergies?"), answer("Noted.", has_allergies=False)],
            "ask_conditions": [answer("Any conditions?"), answer("", "handoff")],
        }
    )
    session = Session.start(INTAKE, model=model)
    turns = talk(session, ["January 1st 1983", "None", "No", "Can I talk to a nurse?"])
    assert [t.state for t in turns[:3]] == ["ask_medications", "ask_allergies", "ask_conditions"]
    assert turns[-1].completed and turns[-1].reply.startswith("Of course")
    options = model.requests_for("ask_conditions")[-1].options
    assert [o.id for o in options] == ["emergency", "handoff", "ask_visit_reason"]
    assert [o.anywhere for o in options] == [True, True, False]
    prompt = model.requests_for("ask_conditions")[-1].messages[0]["content"]
    assert "- `emergency`: [holds in every state; check it first]" in prompt


@pytest.mark.parametrize("days", [1])
def test_dates_are_read_relative_to_today(days: int) -> None:
    from cgraph.backends.offline.slots import extract
    from cgraph.spec.model import Slot
    from cgraph.spec.slots import answer_schema

    schemas = {"day": answer_schema(Slot(format="date"))}
    tomorrow = (date.today() + timedelta(days=days)).isoformat()
    assert extract(schemas, ("day",), "tomorrow please") == {"day": tomorrow}


def test_a_count_said_with_a_day_is_a_count_when_no_date_is_asked_for() -> None:
    from cgraph.backends.offline.slots import extract
    from cgraph.spec.model import Slot
    from cgraph.spec.slots import answer_schema

    schemas = {"party_size": answer_schema(Slot(type="integer", minimum=1))}
    for message in ("a table for 4 tomorrow", "table for 4 on Friday"):
        assert extract(schemas, ("party_size",), message) == {"party_size": 4}, message


def test_a_count_said_with_a_day_stays_a_count_when_a_date_is_asked_for_too() -> None:
    from cgraph.backends.offline.slots import extract
    from cgraph.spec.model import Slot
    from cgraph.spec.slots import answer_schema

    schemas = {
        "party_size": answer_schema(Slot(type="integer", minimum=1)),
        "day": answer_schema(Slot(format="date")),
    }
    now = datetime(2026, 11, 23, 12, 0)  # a Monday
    said = {
        "a table for 4 tomorrow": {"party_size": 4, "day": "2026-11-24"},
        "table for 4 on Friday": {"party_size": 4, "day": "2026-11-27"},
        "for 4 on 4 December": {"party_size": 4, "day": "2026-12-04"},
    }
    for message, expected in said.items():
        assert extract(schemas, ("party_size",), message, now=now) == expected, message


def test_dates_times_and_numbers_fill_their_slots_in_the_order_said() -> None:
    from cgraph.backends.offline.slots import extract
    from cgraph.spec.model import Slot
    from cgraph.spec.slots import answer_schema

    date_, time_, count = Slot(format="date"), Slot(format="time"), Slot(type="integer")
    kinds = {"in": date_, "out": date_, "from": time_, "to": time_, "adults": count, "kids": count}
    schemas = {name: answer_schema(slot) for name, slot in kinds.items()}
    collect = tuple(kinds)
    now = datetime(2026, 11, 23, 12, 0)
    both = extract(
        schemas, collect, "3 March to 7 March, 9am to 5pm, 2 adults and 1 child", now=now
    )
    assert both == {
        "in": "2027-03-03", "out": "2027-03-07", "from": "09:00", "to": "17:00",
        "adults": 2, "kids": 1,
    }  # fmt: skip
    # One of each said while the first of each is known: it is the one still missing.
    late = ("out", "to", "kids")
    one = extract(schemas, collect, "on 7 March, until 5pm, 1 child", now=now, missing=late)
    assert one == {"out": "2027-03-07", "to": "17:00", "kids": 1}
    # Nothing missing: a value said again goes to the first slot of its kind (a correction).
    again = extract(schemas, collect, "on 4 March", now=now)
    assert again == {"in": "2027-03-04"}


def test_a_whole_amount_in_a_number_slot_stays_whole() -> None:
    from cgraph.backends.offline.slots import extract
    from cgraph.spec.model import Slot
    from cgraph.spec.slots import answer_schema, normalised

    schemas = {"amount": answer_schema(Slot(type="number", minimum=1))}
    found = extract(schemas, ("amount",), "450 euros")
    assert found == {"amount": 450} and type(found["amount"]) is int  # rendered "450"
    assert extract(schemas, ("amount",), "12.50 euros") == {"amount": 12.5}
    assert normalised(Slot(type="number"), 450.0) == 450 and normalised(Slot(), True) is True
