"""Drawing a graph as DOT: every declared edge once, shapes by type, coverage marked."""

from __future__ import annotations

import re

from cgraph.draw.picture import Highlight, dot_source, edges
from cgraph.runtime.routes.exits import exit_options
from cgraph.spec.load import load_graph
from cgraph.spec.topology import hubs
from tests.conftest import FIXTURES, GRAPHS

ASSISTANT = load_graph(GRAPHS / "assistant.yaml")
EDGE = re.compile(r'^  "([^"]+)" -> "([^"]+)" \[(.*)\];$')


def drawn_edges(dot: str) -> list[tuple[str, str, str]]:
    return [m.groups() for line in dot.splitlines() if (m := EDGE.match(line))]  # type: ignore[misc]


def test_every_declared_exit_start_and_on_error_is_drawn_once() -> None:
    found = drawn_edges(dot_source(ASSISTANT))
    declared = sum(len(exit_options(s)) for s in ASSISTANT.states.values())
    on_error = sum(1 for s in ASSISTANT.states.values() if getattr(s, "on_error", None))
    anywhere = len(ASSISTANT.global_exits)  # each drawn once, from ANY
    assert (
        anywhere == 1
        and ("ANY", "stopped", 'label="The user wants to stop or\\ncancel what is under way…"')
        in found
    )
    assert len(found) == declared + on_error + anywhere + 1  # one start edge
    assert ("START", "supervisor", "") in found
    routes = [attrs for _, _, attrs in found if 'label="on error"' in attrs]
    assert len(routes) == on_error == 2 and all("style=dotted" in attrs for attrs in routes)


def test_a_conditional_start_labels_its_edges_with_their_conditions() -> None:
    starts = [e for e in edges(load_graph(GRAPHS / "medical_checkin.yaml")) if e.source == "START"]
    assert [(e.target, e.label) for e in starts] == [
        ("welcome_patient", "new user or returning user")
    ]


def test_the_start_entry_taken_is_marked_and_the_other_drawn_plain() -> None:
    graph = load_graph(GRAPHS / "library_reservation.yaml")
    taken = frozenset({("START", "verify_card")})
    by_edge = {
        (s, t): a for s, t, a in drawn_edges(dot_source(graph, Highlight(taken, frozenset())))
    }
    assert "penwidth=2.4" in by_edge[("START", "verify_card")]
    assert "dashed" not in by_edge[("START", "welcome_visitor")]
    assert "penwidth" not in by_edge[("START", "welcome_visitor")]


def test_states_are_shaped_by_type() -> None:
    dot = dot_source(ASSISTANT)
    assert '"supervisor" [shape=box' in dot and '"list_files" [shape=component' in dot
    assert '"research" [shape=tab' in dot and '"END" [shape=doublecircle' in dot


def test_coverage_marks_taken_exits_green_and_the_rest_dashed_red() -> None:
    taken = frozenset({("supervisor", "list_files")})
    dot = dot_source(ASSISTANT, Highlight(taken, frozenset({"supervisor", "list_files"})))
    by_edge = {(s, t): attrs for s, t, attrs in drawn_edges(dot)}
    assert "penwidth=2.4" in by_edge[("supervisor", "list_files")]
    assert "style=dashed" in by_edge[("supervisor", "read_file")]
    never = next(line for line in dot.splitlines() if line.startswith('  "show_files" ['))
    assert 'color="#9ca3af"' in never and "dashed" in never


def test_long_descriptions_are_cut_to_two_lines() -> None:
    labels = [e.label for e in edges(ASSISTANT) if e.label]
    assert labels and all(len(label.split("\n")) <= 2 for label in labels)


def test_resumable_exits_come_back_and_resume_is_a_node_of_its_own() -> None:
    dot = dot_source(load_graph(GRAPHS / "contacts.yaml"))
    assert '"RESUME" [shape=circle, label="RESUME"' in dot
    back = [line for line in dot.splitlines() if "dir=both" in line]
    assert [line.split(" [")[0].strip() for line in back] == [
        '"ANY" -> "add_contact"',
        '"ANY" -> "remove_contact"',
        '"ANY" -> "list_contacts"',
    ]
    assert '"show_contacts" -> "RESUME" [];' in dot
    plain = dot_source(load_graph(GRAPHS / "restaurant_reservation.yaml"))
    assert "RESUME" not in plain and "dir=both" not in plain


def test_an_exit_that_drops_an_interruption_has_a_bar_at_its_tail() -> None:
    dot = dot_source(load_graph(FIXTURES / "draw" / "drop.yaml"))
    found = {(source, target): attrs for source, target, attrs in drawn_edges(dot)}
    assert {pair for pair, attrs in found.items() if "arrowtail=tee" in attrs} == {
        ("go_on", "idle")
    }
    assert "arrowtail=odot" in found[("ANY", "balance")]  # a resume comes back: not cut
    assert "arrowtail" not in found[("go_on", "RESUME")]
    assert "arrowtail=tee" not in dot_source(load_graph(GRAPHS / "contacts.yaml"))


def test_a_hub_is_drawn_above_its_desks_and_hand_offs_with_a_double_arrowhead() -> None:
    desk = load_graph(FIXTURES / "handoff" / "help_desk.yaml")
    assert hubs(desk) == {"triage": ("seats", "status")}  # `seats` has one desk: no hub
    dot = dot_source(desk)
    assert (
        '"triage" [shape=box, label="triage\\n‹action›", fillcolor="#dbeafe", peripheries=2]' in dot
    )
    assert dot.count("peripheries=2") == 1 and '  {rank=same; "seats"; "status"}' in dot
    found = {(source, target): attrs for source, target, attrs in drawn_edges(dot)}
    unranked = {pair for pair, attrs in found.items() if "constraint=false" in attrs}
    assert unranked == {("seats", "triage"), ("seat_changed", "triage"), ("status", "triage")}
    handing = {pair for pair, attrs in found.items() if "arrowhead=veevee" in attrs}
    assert handing == {("triage", "seats"), ("seats", "triage")}
    assert "peripheries" not in dot_source(ASSISTANT) and "veevee" not in dot_source(ASSISTANT)
