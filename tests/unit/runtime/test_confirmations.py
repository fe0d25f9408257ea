"""Offline, no message that is not a clear yes runs a side effect.

Every example graph's state from which a message may lead into a side effect (an exit, a
`when:` exit on a slot the message fills, a global exit; straight or through the silent
states that run on in the same turn) is started with the variables a session there holds
and sent questions, hedges, "wait", "yes but first…" and "no wait, yes": none may enter a
side-effect state; the state answers or asks again instead. The states come from the
graphs, so a new side effect is covered as soon as it is listed in
tests/fixtures/flows/confirmations.yaml (the first test says what is missing or extra).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.runtime.routes.exits import exit_options
from cgraph.session import Session
from cgraph.spec.load import load_graph
from cgraph.spec.model import ActionState, Graph, GraphState, SideEffectState, exits_of
from tests.conftest import FIXTURES, GRAPHS

SUITE = yaml.safe_load((FIXTURES / "flows" / "confirmations.yaml").read_text(encoding="utf-8"))
MESSAGES: list[str] = SUITE["messages"]
STATES: dict[str, dict[str, dict[str, Any]]] = SUITE["states"]


def side_effects(graph: Graph) -> set[str]:
    return {name for name, state in graph.states.items() if isinstance(state, SideEffectState)}


def before_side_effects(graph: Graph) -> set[str]:
    """The action states a message may move into a side effect from: straight, or through
    silent states (a decision, a reflection, an annotation) that run on in the same turn."""
    found = set()
    for name, state in graph.states.items():
        if not isinstance(state, ActionState):
            continue
        targets = {o.target for o in exit_options(state)}
        targets |= {g.next_state for g in graph.global_exits if name not in g.except_}
        if any(runs_on_into_a_side_effect(graph, t, set()) for t in targets):
            found.add(name)
    return found


def runs_on_into_a_side_effect(graph: Graph, name: str, seen: set[str]) -> bool:
    state = graph.states.get(name)
    if isinstance(state, SideEffectState):
        return True
    if state is None or isinstance(state, ActionState | GraphState) or name in seen:
        return False  # a user's turn (or a sub-graph's own states) comes first
    seen.add(name)
    return any(runs_on_into_a_side_effect(graph, e.next_state, seen) for e in exits_of(state))


def test_every_state_before_a_side_effect_is_in_the_suite() -> None:
    for path in sorted(GRAPHS.glob("*.yaml")):
        graph = load_graph(path)
        wanted = before_side_effects(graph)
        assert wanted == set(STATES.get(path.name, {})), (path.name, wanted)
    assert len(STATES) >= 12  # every example graph with a side effect that a message reaches


CASES = [
    (graph, state, message)
    for graph, states in STATES.items()
    for state in states
    for message in MESSAGES
]


@pytest.mark.parametrize(("graph_file", "state", "message"), CASES)
def test_no_message_but_a_clear_yes_runs_a_side_effect(
    graph_file: str, state: str, message: str
) -> None:
    path: Path = GRAPHS / graph_file
    graph = load_graph(path)
    variables = STATES[graph_file][state]
    session = Session.start(graph, model="semantic", state=state, variables=variables)
    turn = session.send(message)
    ran = [s for s in turn.path if s in side_effects(graph)]
    assert not ran, f"{graph_file}#{state}: {message!r} ran {ran} ({turn.reply!r})"
    assert not turn.effects and turn.reply.strip()
