"""Lists and records: `array` and `object` slots filled from a model's structured answer
or, offline, from the enum, pattern and number fields a message names; `append:` builds a
list over turns; a record missing a required field is asked about, the items given right
kept; templates, `when:` and the answer schema see them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.offline import records
from cgraph.runtime.ask.answers import check_slots
from cgraph.session import Session
from cgraph.spec import slots
from cgraph.spec.model import Slot
from cgraph.spec.templating import render_text
from tests.unit.runtime._runtime import graph, write

MEDICATIONS = r"""
cgraph: 1
name: medications
start: ask_medications
slots:
  medications:
    type: array
    description: The medications the patient takes now, one record each.
    items:
      type: object
      required: [medication, dosage]
      properties:
        medication: {type: string, enum: [lisinopril, metformin, vitamin D, ibuprofen]}
        dosage: {type: string, pattern: '\d+ ?(mg|mcg|IU)'}
        frequency: {type: string, enum: [once a day, twice a day, as needed]}
states:
  ask_medications:
    type: action
    objective: Learn every medication the patient takes, with its dose.
    actions: [Ask which medications they take, with the dose and how often.]
    intra_state_navigation_guidelines: [When they say that is all, move on.]
    action_guidelines: [Repeat back what you have so far.]
    boundary_constraints: [Never comment on a medication or a dose.]
    collect: [medications]
    append: [medications]
    say: >-
      {% if medications %}So far: {{ medications }}. Anything else?{% else %}Which
      medications do you take, with the dose?{% endif %}
    exit_conditions:
      - when: medications | length >= 4
        next_state: long_list
      - description: The patient says that is all, there is nothing else.
        examples: ["That's all.", "No, nothing else.", "That's it."]
        next_state: read_back
        early: false
      - description: The patient takes no medication.
        examples: ["I don't take any medication.", "None."]
        next_state: END
        early: true
  long_list:
    type: annotation
    objective: Say that the list is long enough to read back.
    say: That is quite a list, so let me read it back.
    next_state: read_back
  read_back:
    type: action
    objective: Read the list back.
    actions: [Read the medications back.]
    intra_state_navigation_guidelines: [Once confirmed, finish.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never comment on a medication.]
    say: >-
      You take {{ medications | length }}:{% for m in medications %} {{ m.medication }}
      {{ m.dosage }}{{ ";" if not loop.last else "." }}{% endfor %}
    exit_conditions:
      - description: The patient confirms the list.
        examples: ["Yes, that's right.", "Correct."]
        next_state: END
      - description: The patient wants to add a medication.
        examples: ["Oh, I forgot one.", "Wait, I also take something else."]
        next_state: ask_medications
"""
LISINOPRIL = {"medication": "lisinopril", "dosage": "10 mg", "frequency": "once a day"}
VITAMIN_D = {"medication": "vitamin D", "dosage": "1000 IU", "frequency": None}


@pytest.fixture
def meds(tmp_path: Path) -> Slot:
    return graph(tmp_path, MEDICATIONS).slots["medications"]


def test_a_message_gives_each_record_it_names_and_a_piece_completes_the_one_before(
    meds: Slot,
) -> None:
    said = "lisinopril 10 mg once a day and vitamin D"
    assert records.read(meds, said) == [
        LISINOPRIL,
        {"medication": "vitamin D", "dosage": None, "frequency": None},
    ]
    spread = "metformin, 500 mg, twice a day; also ibuprofen 200 mg as needed"
    assert records.read(meds, spread) == [
        {"medication": "metformin", "dosage": "500 mg", "frequency": "twice a day"},
        {"medication": "ibuprofen", "dosage": "200 mg", "frequency": "as needed"},
    ]
    assert records.read(meds, "I'm not sure") is None


def test_a_list_of_plain_items_takes_every_value_named_in_order() -> None:
    toppings = Slot(type="array", items=Slot(enum=("olives", "ham", "extra cheese")))
    assert records.read(toppings, "extra cheese and olives, and olives again") == [
        "extra cheese",
        "olives",
    ]
    counts = Slot(type="array", items=Slot(type="integer"))
    assert records.read(counts, "rooms 12, 14 and 15.5") == [12, 14]


def test_a_record_missing_a_required_field_is_refused_and_the_others_kept(meds: Slot) -> None:
    given = [LISINOPRIL, {"medication": "vitamin D"}]
    values, problems = check_slots({"medications": given}, {"medications": _schema(meds)})
    assert values == {"medications": [LISINOPRIL]}
    assert problems == ("slot `medications`: item 2 (vitamin D): `dosage` is missing",)
    assert slots.problem(meds, [{**LISINOPRIL, "dose": 1}]) == (
        "item 1 (lisinopril): `dose` is not one of its fields (medication, dosage, frequency)"
    )
    assert slots.problem(meds, "lisinopril") == "`'lisinopril'` is not a list"


def _schema(slot: Slot) -> dict[str, Any]:
    return slots.answer_schema(slot)


def _strict(schema: dict[str, Any], where: str = "") -> None:
    """OpenAI's strict mode: every object closed, every property required."""
    if "object" in schema.get("type", ()):
        assert schema["additionalProperties"] is False, where
        assert schema["required"] == list(schema["properties"]), where
        for name, sub in schema["properties"].items():
            _strict(sub, f"{where}.{name}")
    if "items" in schema:
        _strict(schema["items"], f"{where}[]")


def test_the_answer_schema_is_strict_all_the_way_down_and_reads_back(meds: Slot) -> None:
    schema = _schema(meds)
    _strict(schema)
    record = schema["items"]["properties"]
    assert schema["type"] == ["array", "null"] and record["medication"]["type"] == "string"
    assert record["frequency"]["type"] == ["string", "null"]
    assert None in record["frequency"]["enum"]
    back = slots.from_answer_schema(schema)
    assert back.items is not None and back.items.required == ("medication", "dosage")
    assert back.items.properties["frequency"].enum == ("once a day", "twice a day", "as needed")


def test_offline_a_list_is_built_over_turns_and_what_is_missing_asked_for(
    tmp_path: Path,
) -> None:
    session = Session.start(write(tmp_path, MEDICATIONS))
    assert session.send("hi").reply == "Which medications do you take, with the dose?"
    turn = session.send("lisinopril 10 mg once a day and vitamin D")
    assert turn.reply == (
        "Medications: item 2 (vitamin D): dosage is missing. So far: lisinopril 10 mg"
        " once a day. Anything else?"
    )
    assert session.variables["medications"] == [LISINOPRIL]
    turn = session.send("vitamin D 1000 IU")
    assert session.variables["medications"] == [LISINOPRIL, VITAMIN_D]
    assert turn.reply == "So far: lisinopril 10 mg once a day, vitamin D 1000 IU. Anything else?"
    assert not any(s.get("corrected") for s in _slot_events(session)), "adding is no correction"
    turn = session.send("That's all.")
    assert turn.state == "read_back"
    assert turn.reply == "You take 2: lisinopril 10 mg; vitamin D 1000 IU."


def _slot_events(session: Session) -> list[dict[str, Any]]:
    return [e.data for e in session.events() if e.kind == "slots"]


def test_a_when_exit_reads_the_list_and_a_model_fills_it_from_its_structured_answer(
    tmp_path: Path,
) -> None:
    three = [
        {"medication": "metformin", "dosage": "500 mg", "frequency": "twice a day"},
        {"medication": "ibuprofen", "dosage": "200 mg", "frequency": None},
        {"medication": "vitamin D", "dosage": "1000 IU"},
    ]
    model = ScriptedModel(
        {
            "ask_medications": [
                _answer(medications=[LISINOPRIL]),
                _answer(medications=three),
            ],
            "read_back": {"exit": "stay", "reason": "reading", "reply": "", "slots": {}},
        }
    )
    session = Session.start(write(tmp_path, MEDICATIONS), model=model)
    session.send("lisinopril 10 mg once a day")
    assert session.variables["medications"] == [LISINOPRIL]
    turn = session.send("and metformin, ibuprofen and vitamin D")
    # Four records: the `when:` exit holds once this turn's items are in.
    assert turn.path == ("ask_medications", "long_list", "read_back")
    assert [m["medication"] for m in session.variables["medications"]] == [
        "lisinopril",
        "metformin",
        "ibuprofen",
        "vitamin D",
    ]
    assert session.variables["medications"][3]["frequency"] is None
    sent = model.requests_for("ask_medications")[0]
    _strict(sent.schema)
    prompt = sent.messages[0]["content"]
    assert "a list of records (medication, dosage, frequency; medication and dosage" in prompt
    assert "give only the items this message adds" in prompt


def _answer(**values: Any) -> dict[str, Any]:
    return {"exit": "stay", "reason": "given", "reply": "Anything else?", "slots": values}


def test_templates_say_a_list_and_a_record_in_words() -> None:
    context = {"meds": [LISINOPRIL, VITAMIN_D], "toppings": ["ham", "olives"]}
    assert render_text("{{ meds }}", context) == ("lisinopril 10 mg once a day, vitamin D 1000 IU")
    assert render_text("{{ toppings }} ({{ toppings | length }})", context) == "ham, olives (2)"
    assert render_text("{{ meds[0].dosage }}", context) == "10 mg"
    assert render_text("{{ toppings | tojson }}", context) == '["ham", "olives"]'
