"""Starting a session in a given state with given variables (deep states tested directly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import ConfigError
from cgraph.session import Session
from tests.conftest import GRAPHS
from tests.unit.runtime._runtime import go, stay

MEDICAL = GRAPHS / "medical_checkin.yaml"


def test_a_session_starts_in_a_deep_state_with_variables(tmp_path: Path) -> None:
    model = ScriptedModel(
        {
            "check_chest_pain": [go("flag_chest_pain", "pressure")],
            "check_shortness_of_breath": [stay("Any breathlessness?")],
        }
    )
    variables = {"nitro_used": True}
    session = Session.start(
        MEDICAL, model=model, store=tmp_path, state="check_chest_pain", variables=variables
    )
    assert session.state == "check_chest_pain" and session.variables["nitro_used"] is True
    turn = session.send("My chest hurts when I climb stairs.")
    assert turn.path == ("check_chest_pain", "flag_chest_pain", "check_shortness_of_breath")
    assert turn.transitions[0].from_state == "check_chest_pain"
    assert "chest pain" in session.variables["red_flags"]


def test_the_start_state_is_the_stopping_place_of_a_guard(tmp_path: Path) -> None:
    model = ScriptedModel({"check_chest_pain": [stay("Any chest pain?")]})
    session = Session.start(MEDICAL, model=model, state="check_chest_pain")
    turn = session.send("hello")
    assert turn.state == "check_chest_pain" and turn.path == ("check_chest_pain",) and turn.reply


def test_an_unknown_start_state_is_named_with_the_states_there_are() -> None:
    with pytest.raises(ConfigError, match=r"no state `nowhere`; its states are .*welcome_patient"):
        Session.start(MEDICAL, model="semantic", state="nowhere")
