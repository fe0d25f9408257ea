"""Every state type answers the keys only some types have (`StateFields`): the types that
declare a key read their own value, the others the neutral one, and none of it changes
what the format accepts (each type's fields, required or not, stay its own)."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import get_args

import pytest

from cgraph.spec.load import load_graph
from cgraph.spec.model import NEUTRAL, ActionState, AnyState, DecisionState, StateFields
from tests.conftest import GRAPHS

TYPES = get_args(AnyState)


def test_the_neutral_keys_are_the_ones_declared_on_the_base() -> None:
    assert set(NEUTRAL) == set(StateFields.__annotations__)


@pytest.mark.parametrize("kind", TYPES, ids=lambda t: t.__name__)
def test_a_type_without_a_key_reads_its_neutral_value(kind: type) -> None:
    own = {f.name for f in fields(kind)}
    for name, neutral in NEUTRAL.items():
        if name not in own:
            assert getattr(kind, name) == neutral, (kind.__name__, name)


def test_the_types_that_declare_a_key_keep_it_required_or_defaulted_as_before() -> None:
    required = {
        kind.__name__: {f.name for f in fields(kind) if f.default is MISSING}
        & {f.name for f in fields(kind) if f.default_factory is MISSING}
        for kind in (ActionState, DecisionState)
    }
    assert {"actions", "exit_conditions", "intra_state_navigation_guidelines"} <= required[
        "ActionState"
    ]
    assert "exit_conditions" in required["DecisionState"]
    assert "on_error" not in {f.name for f in fields(DecisionState)}  # not a key of its


def test_states_of_a_real_graph_answer_every_key_without_a_probe() -> None:
    graph = load_graph(GRAPHS / "medical_checkin.yaml")
    for state in graph.states.values():
        own = {f.name for f in fields(state)}
        for name, neutral in NEUTRAL.items():
            value = getattr(state, name)
            assert value == neutral or name in own, (state.type, name, value)
        assert state.exit_conditions or state.next_state or state.type == "action"
