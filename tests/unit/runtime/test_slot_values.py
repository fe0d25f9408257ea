"""Slot values at run time: a `set:` that writes a slot is checked against the slot's
schema (an invalid value is a located, audited failure and never stored), rendering keeps
types, and offline an invalid value the user gives is asked for once more, naming what
was wrong, then left unset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import action, simple, write

SLOTS = """\
slots:
  amount: {type: integer, minimum: 1, maximum: 100}
  currency: {type: string, enum: [EUR, USD]}
  code: {type: string, pattern: "^[A-Z]{3}$"}
  reference: {type: string}
  size: {type: integer, minimum: 1, maximum: 12}
variables: {raw: "150"}
"""


def _setting(folder: Path, values: dict[str, str]) -> Path:
    """`a` (the model fills amount and reference) → annotation `n` setting `values` → `b`."""
    lines = "".join(f"      {name}: {value!r}\n" for name, value in values.items())
    body = (
        action("a", {"n": "The user gave the amount."})
        + f"""\
  n:
    type: annotation
    objective: Work the values out.
    set:
{lines}    next_state: b
"""
        + action("b", {"END": "The user says goodbye."}, fallback="Something went wrong here.")
    )
    return write(folder, simple(start="a", body=body, top=SLOTS))


def _filled(**slots: Any) -> dict[str, Any]:
    return {"exit": "n", "reason": "given", "reply": "", "slots": slots}


def _run(path: Path, **slots: Any) -> tuple[Session, Any]:
    model = ScriptedModel(
        {"a": [_filled(**slots)], "b": [{"exit": "stay", "reason": "", "reply": "Done."}]}
    )
    session = Session.start(path, model=model)
    return session, session.send("fifty, reference 150")


def test_rendering_keeps_the_slot_types(tmp_path: Path) -> None:
    path = _setting(tmp_path, {"amount": "{{ amount }}", "reference": "{{ raw }}"})
    session, turn = _run(path, amount=50)
    assert turn.reply == "Done."
    assert session.variables["amount"] == 50 and session.variables["reference"] == "150"
    assert type(session.variables["amount"]) is int


def test_a_whole_float_is_kept_as_an_integer_slot_value(tmp_path: Path) -> None:
    session, _ = _run(_setting(tmp_path, {"amount": "{{ amount / 2 }}"}), amount=50)
    assert session.variables["amount"] == 25 and type(session.variables["amount"]) is int


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("amount", "{{ amount * 10 }}", "`500` is above the maximum 100"),
        ("amount", "{{ amount - 50 }}", "`0` is below the minimum 1"),
        ("amount", "{{ raw }}", "`'150'` is not a whole number"),
        ("currency", "GBP", "`GBP` is not one of EUR, USD"),
        ("code", "eur", "`eur` does not match `^[A-Z]{3}$`"),
        ("reference", "{{ amount }}", "`50` is not text"),
    ],
)
def test_a_set_value_that_breaks_the_slot_schema_is_never_stored(
    tmp_path: Path, name: str, value: str, why: str
) -> None:
    path = _setting(tmp_path, {"currency": "EUR", name: value})
    session, turn = _run(path, amount=50)
    assert turn.state == "a" and turn.fallback  # the turn stops with the fallback reply
    assert session.variables.get("currency") is None  # nothing of the step is kept
    assert session.variables["amount"] == 50 and session.variables.get("code") is None
    (failed,) = [e.data for e in session.events() if e.kind == "render_failed"]
    assert failed["state"] == "n" and failed["field"] == f"set.{name}"
    assert failed["cause"] == "SlotValueError"
    line = 1 + next(
        i
        for i, t in enumerate(path.read_text().splitlines())
        if f"{name}: " in t and "{type" not in t
    )
    assert failed["error"].startswith(f"{path}:{line}:")
    assert f"slot `{name}`: {why}" in failed["error"]


def test_set_may_unset_a_slot(tmp_path: Path) -> None:
    session, turn = _run(_setting(tmp_path, {"amount": "{{ none }}"}), amount=50)
    assert turn.reply == "Done." and session.variables["amount"] is None


# ----- offline: an invalid value is asked for once more, then left unset ------------------

PARTY = simple(
    start="ask",
    top=SLOTS,
    body="""\
  ask:
    type: action
    objective: Learn the party size.
    actions: [Ask how many people are coming.]
    intra_state_navigation_guidelines: [Once known, move on.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    collect: [size]
    say: How many people are coming?
    exit_conditions:
      - next_state: done
"""
    + action("done", {"END": "The user says goodbye."}, say="A table for {{ size }}."),
)


def test_offline_an_out_of_range_value_is_asked_again_naming_the_range(tmp_path: Path) -> None:
    session = Session.start(write(tmp_path, PARTY), model="semantic")
    turn = session.send("We are 40 people.")
    assert turn.state == "ask" and session.variables["size"] is None
    assert turn.reply == "Size: 40 is above the maximum 12. How many people are coming?"
    (failure,) = [e.data for e in session.events() if e.kind == "llm_error"]
    assert "slot `size`: `40` is above the maximum 12" in failure["error"]
    assert turn.warnings == (
        "could not read a valid value from the message in ask "
        "(slot `size`: `40` is above the maximum 12); asking again",
    )  # no model failed: the message held a value the slot refuses
    assert turn.llm_calls == 2  # asked once more, as an LLM is
    again = session.send("Forty.")
    assert again.state == "ask" and session.variables["size"] is None
    assert again.reply.startswith("Size: 40 is above the maximum 12.")
    done = session.send("Then we are 8.")
    assert done.state == "done" and session.variables["size"] == 8
    assert done.reply == "A table for 8."


def test_offline_a_valid_value_is_taken_at_once(tmp_path: Path) -> None:
    session = Session.start(write(tmp_path, PARTY), model="semantic")
    turn = session.send("Six of us.")
    assert turn.state == "done" and session.variables["size"] == 6
    assert not [e for e in session.events() if e.kind == "llm_error"]
