"""Exit ids and the transition check."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import TransitionError
from cgraph.runtime.routes.exits import check_transition, exit_options, unique_ids
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, graph, simple, stay, two_actions


def test_check_transition_refuses_what_the_graph_does_not_declare(tmp_path: Path) -> None:
    spec = two_actions(tmp_path)
    check_transition(spec, "a", "b")
    check_transition(spec, "a", "END")
    with pytest.raises(TransitionError, match="not declared"):
        check_transition(spec, "b", "END")
    with pytest.raises(TransitionError, match="not a state"):
        check_transition(spec, "zzz", "a")


def test_exit_ids_are_targets_numbered_only_when_repeated(tmp_path: Path) -> None:
    assert unique_ids(("a", "b", "a", "a")) == ("a", "b", "a_2", "a_3")
    spec = graph(
        tmp_path,
        simple(
            body=action("a", {"b": "One.", "b~2": "Two.", "END": "Three."})
            + action("b", {"END": "x"})
        ),
    )
    assert [o.id for o in exit_options(spec.states["a"])] == ["b", "b_2", "END"]
    model = ScriptedModel({"a": [go("b_2", "second")], "b": [stay("in b")]})
    turn = Session.start(spec, model=model).send("hi")
    assert turn.transitions[-1].exit_id == "b_2" and turn.transitions[-1].description == "Two."
