"""A graph drawn for a page: element ids on every state and edge, `graph` states opened as
clusters, and what a conversation did as the ids to light (through closed clusters)."""

from __future__ import annotations

import re

from cgraph.draw.focus import Drawing
from cgraph.draw.picture import dot_source, edge_id, node_id
from cgraph.runtime.state.records import TransitionRecord
from cgraph.spec.load import load_graph
from tests.conftest import FIXTURES, GRAPHS

ROOT = load_graph(FIXTURES / "flows" / "root.yaml")
CHECK_IN = load_graph(GRAPHS / "medical_checkin.yaml")
IDS = re.compile(r'\bid="([^"]+)"')


def moved(source: str, target: str, exit_id: str, turn: int = 1) -> TransitionRecord:
    return TransitionRecord(
        turn=turn,
        from_state=source,
        to_state=target,
        exit_id=exit_id,
        description="",
        reason="",
        at=0.0,
    )


def test_without_ids_the_picture_is_drawn_as_before() -> None:
    assert " id=" not in dot_source(CHECK_IN) and "cluster" not in dot_source(ROOT)


def test_every_state_and_edge_has_one_id() -> None:
    found = IDS.findall(dot_source(CHECK_IN, ids=True))
    assert len(found) == len(set(found))
    assert {node_id(s) for s in CHECK_IN.states} <= set(found)
    assert node_id("START") in found and edge_id("START", "welcome_patient") in found
    assert edge_id("ANY", "emergency") in found  # a global exit, once, from ANY


def test_an_opened_graph_state_is_a_cluster_of_its_sub_graphs_states() -> None:
    dot = dot_source(ROOT, ids=True, opened=frozenset({"s"}))
    assert 'subgraph "cluster_s"' in dot and 'label="s ‹graph: side.yaml›"' in dot
    assert '"side.yaml#a" [shape=box, label="a\\n‹action›"' in dot
    assert f'id="{edge_id("s", "a")}"' in dot  # entering the sub-graph at its start
    assert '"side.yaml#a" -> "parts/order.yaml#size"' in dot  # a move across files


def test_a_conversation_is_lit_through_a_closed_cluster_and_inside_an_open_one() -> None:
    drawing = Drawing(ROOT)
    taken = [moved("START", "s", "s"), moved("s", "side.yaml#a", "a")]
    closed = drawing.focus(taken, taken, ["s", "side.yaml#a"], "side.yaml#a")
    assert closed.current == node_id("s") and closed.path == (node_id("s"),)
    assert set(closed.taken) == {edge_id("START", "s"), edge_id("s", "a")}
    opened = drawing.focus(taken, taken[1:], ["s", "side.yaml#a"], "side.yaml#a", frozenset({"s"}))
    assert opened.current == node_id("side.yaml#a")
    assert opened.latest == (edge_id("s", "a"),)
    assert opened.entered == (node_id("s"), node_id("side.yaml#a"))


def test_a_move_across_files_is_shown_by_its_own_name() -> None:
    drawing = Drawing(ROOT)
    assert drawing.owners == {"side.yaml": "s"}
    assert drawing.shown("parts/order.yaml#size", frozenset()) == "parts/order.yaml#size"
    assert drawing.shown("side.yaml#a", frozenset({"s"})) == "side.yaml#a"


def test_the_picture_is_drawn_once_per_set_of_open_clusters() -> None:
    drawing = Drawing(ROOT)
    first = drawing.svg(frozenset({"s", "no_such_state"}))
    assert first is drawing.svg(frozenset({"s", "no_such_state"}))
    assert b'class="cluster"' in first and b'class="cluster"' not in drawing.svg()
