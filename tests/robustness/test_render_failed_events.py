"""Every failing render of a step is audited: a `render_failed` event (state, field,
cause) and the fallback reply, whatever the model would have answered.

An action's `say:`, its prompt texts (objective, actions, guidelines), a `when:` and a
fallback each fail the step before the model is asked, so neither the user nor the model
ever reads a template's source in place of its text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.robustness.run_probe import FALLBACK, talk_state, write_graph
from tests.unit.runtime._runtime import graph, stay

BROKEN = "{{ 1/0 }}"


def start(tmp_path: Path, states: dict[str, Any]) -> tuple[Session, ScriptedModel]:
    """A session of `states` (the first starts), the model staying in `a` with words of
    its own."""
    doc = {"cgraph": 1, "name": "g", "start": next(iter(states)), "fallback": FALLBACK}
    doc |= {"variables": {"size": None}, "states": states}
    model = ScriptedModel({"a": stay("In my own words.")})
    return Session.start(graph(tmp_path, yaml.safe_dump(doc, sort_keys=False)), model=model), model


def failures(session: Session) -> list[tuple[str, str, str]]:
    found = [e.data for e in session.events() if e.kind == "render_failed"]
    return [(f["state"], f["field"], f["cause"]) for f in found]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("say", BROKEN),
        ("objective", BROKEN),
        ("actions", [BROKEN]),
        ("action_guidelines", ["Be brief.", BROKEN]),
        ("boundary_constraints", [BROKEN]),
    ],
)
def test_a_failing_text_of_the_talking_state_ends_the_turn_audited(
    tmp_path: Path, field: str, value: Any
) -> None:
    session, model = start(tmp_path, {"a": {**talk_state(), field: value}})
    turn = session.send("hi")
    assert (turn.reply, turn.fallback) == (FALLBACK, True)
    assert failures(session) == [("a", field, "ZeroDivisionError")]
    assert model.requests == []  # the model never saw the unrendered text


def test_a_failing_fallback_is_audited_and_the_graph_fallback_is_said(tmp_path: Path) -> None:
    state = {**talk_state(), "say": BROKEN, "fallback": "{{ 2/0 }}"}
    session, _ = start(tmp_path, {"a": state})
    turn = session.send("hi")
    assert turn.reply == FALLBACK
    assert failures(session) == [
        ("a", "say", "ZeroDivisionError"),
        ("a", "fallback", "ZeroDivisionError"),
    ]


def mark(when: str) -> dict[str, Any]:
    """An annotation leaving for `a` when `when` holds, else for `a` all the same."""
    exits = [{"when": when, "next_state": "a"}, {"next_state": "a"}]
    return {"type": "annotation", "objective": "Mark.", "exit_conditions": exits}


@pytest.mark.parametrize(
    ("when", "cause"),
    [("''.__class__.__mro__", "SecurityError"), ("1 / 0 > 1", "ZeroDivisionError")],
)
def test_a_when_that_fails_other_than_for_want_of_a_value_is_audited(
    tmp_path: Path, when: str, cause: str
) -> None:
    session, _ = start(tmp_path, {"m": mark(when), "a": talk_state()})
    turn = session.send("hi")
    assert (turn.reply, turn.fallback) == (FALLBACK, True)
    assert failures(session) == [("m", "when", cause)]


def test_a_when_on_a_value_not_set_yet_does_not_hold(tmp_path: Path) -> None:
    session, _ = start(tmp_path, {"m": mark("size > 3"), "a": talk_state()})
    assert session.send("hi").reply == "In my own words."
    assert failures(session) == []


def test_a_value_holding_an_undefined_part_fails_its_render_not_the_store(
    tmp_path: Path,
) -> None:
    # Each unsafe attribute is an Undefined: kept in a tool's arguments, it once reached
    # the store's JSON and aborted the process.
    path = write_graph(tmp_path, "arguments", "{{ x | map(attribute='__class__') | list }}")
    session = Session.start(path, model=ScriptedModel({"talk": stay("Hi.")}))
    turn = session.send("hi")
    assert (turn.reply, turn.fallback) == (FALLBACK, True)
    assert failures(session) == [("call", "arguments", "UndefinedError")]


@pytest.mark.parametrize(
    ("field", "template", "state"),
    [
        ("set", "{{ '\\ud800' }}", "mark"),
        ("arguments", "{{ {(1, 2): 3} }}", "call"),
        ("say", "{{ 'a\\udcff' }}", "talk"),
    ],
)
def test_a_value_that_cannot_be_stored_fails_its_render_and_the_session_resumes(
    tmp_path: Path, field: str, template: str, state: str
) -> None:
    # Each once reached the store's JSON at commit, and every resume failed there again.
    path, store = write_graph(tmp_path / "g", field, template), tmp_path / "store"
    session = Session.start(path, model=ScriptedModel({"talk": stay("Hi.")}), store=store)
    turn = session.send("hi")
    assert (turn.reply, turn.fallback) == (FALLBACK, True)
    assert failures(session) == [(state, field, "NotStorable")]
    session.close()
    again = Session.resume(session.id, store=store, model=ScriptedModel({"talk": stay("Hi.")}))
    assert again.recovered is None and again.send("again").number == 2
