from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cgraph.spec.load import load_graph, load_graph_text
from cgraph.spec.model import TYPE_LETTERS, Graph
from cgraph.spec.names import START
from cgraph.spec.topology import ANY, Edge, graph_edges, parse
from cgraph.spec.topology import derive as derive_topology
from tests.conftest import FIXTURES, GRAPHS
from tests.support.generated_graph import generate

# The example printed on Amigo's "State-Based Architecture" page, verbatim.
SEED = """\
START(new user) -> [A] welcome_patient
START(returning user) -> [A] welcome_patient

[A] welcome_patient
  (Client ready to proceed with check-in) -> [A] medication_adherence_check

[A] medication_adherence_check
  (Medication information provided) -> [A] vasodilator_check
  (Medication concerns identified) -> [A] assess_medication_impact
  ...

[A] check_chest_pain
  (No concerning findings) -> [A] check_shortness_of_breath
  (Concerning features present) -> [R] reflect_on_session_data
  ...

[R] reflect_on_session_data -> [D] determine_exercise_clearance

[D] determine_exercise_clearance
  (All criteria met) -> [A] summarize_recommendations_approved
  (Disqualifying findings) -> [A] summarize_recommendations_disqualified
  ...

[A] patient_questions
  (No further questions) -> [A] end_session

[A] end_session -> END
"""

EXAMPLES = sorted(GRAPHS.glob("*.yaml"))


def _edges(graph: Graph) -> Counter[tuple[str, str, str | None, bool]]:
    return Counter((e.source, e.target, e.label, e.resume) for e in graph_edges(graph))


def test_the_seed_example_parses_without_problems() -> None:
    topology = parse(SEED)
    assert topology.problems == []
    assert not topology.partial
    assert topology.abbreviated == {
        "medication_adherence_check",
        "check_chest_pain",
        "determine_exercise_clearance",
    }
    assert Edge(START, "welcome_patient", "new user", 1) in topology.edges
    assert Edge("end_session", "END", None, 27) in topology.edges
    assert ("reflect_on_session_data", "determine_exercise_clearance", None) in {
        (e.source, e.target, e.label) for e in topology.edges
    }
    assert len(topology.edges) == 12
    letters = {n.name: n.letter for n in topology.nodes}
    assert letters["determine_exercise_clearance"] == "D"
    assert letters["reflect_on_session_data"] == "R"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_parsing_the_derived_topology_gives_back_exactly_the_graph_edges(path: Path) -> None:
    graph = load_graph(path)
    topology = parse(derive_topology(graph))
    assert topology.problems == []
    assert topology.edge_set() == _edges(graph)
    assert not topology.partial and not topology.abbreviated
    letters = {node.name: node.letter for node in topology.nodes}
    assert letters == {name: TYPE_LETTERS[state.type] for name, state in graph.states.items()}


def test_round_trip_keeps_a_blank_description_as_an_unlabelled_edge() -> None:
    text = (GRAPHS / "companion.yaml").read_text()
    text = text.replace("when: new user", "when: '  '").replace(
        "description: The user says goodbye right away.", "description: ' '"
    )
    graph = load_graph_text(text, "blank.yaml")
    assert [e for e in graph_edges(graph) if e.label is None][:1] == [Edge(START, "receive_input")]
    topology = parse(derive_topology(graph))
    assert topology.problems == []
    assert topology.edge_set() == _edges(graph)


def test_round_trip_holds_on_a_large_generated_graph() -> None:
    graph = load_graph_text(generate(300), "generated.yaml")
    assert parse(derive_topology(graph)).edge_set() == _edges(graph)


def test_round_trip_keeps_awkward_labels_and_on_error() -> None:
    graph = load_graph_text(
        (FIXTURES / "lint" / "tools.yaml")
        .read_text()
        .replace("The user answered.", "The user (finally) answered -> with a file name.")
        .replace(
            "    next_state: call_undeclared", "    on_error: ask\n    next_state: call_undeclared"
        ),
        "t.yaml",
    )
    text = derive_topology(graph)
    assert "  (The user (finally) answered -> with a file name.) -> [S] store" in text
    assert "  (on error) -> [A] ask" in text
    assert parse(text).edge_set() == _edges(graph)


def test_derived_text_uses_blocks_and_single_edge_lines() -> None:
    text = derive_topology(load_graph(GRAPHS / "medical_checkin.yaml"))
    lines = text.splitlines()
    assert lines[0] == "START(new user) -> [A] welcome_patient"
    assert "[R] reflect_on_session_data -> [D] determine_exercise_clearance" in lines
    assert "[A] welcome_patient" in lines
    assert (
        "  (The patient is ready to proceed with the check-in.) -> [A] medication_adherence_check"
        in lines
    )


def test_top_level_dots_mean_partial_and_indented_dots_abbreviate_a_block() -> None:
    topology = parse("[A] a\n  (x) -> [A] b\n  ...\n...\n")
    assert topology.partial
    assert topology.abbreviated == {"a"}


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("[A] a\n  (x) [A] b\n", 2, 3, "expected `(condition) -> [X] state`"),
        ("[A] a\n  x -> [A] b\n", 2, 3, "condition in brackets"),
        ("[A] a -> [Z] b\n", 1, 10, "unknown type letter `[Z]`"),
        ("START new -> [A] a\n", 1, 1, "START(condition)"),
        ("START\n", 1, 1, "needs `-> [X] state`"),
        ("\n  (x) -> [A] b\n", 2, 3, "outside a `[X] state` block"),
        ("[A] a -> b c\n", 1, 10, "expected `[X] state_id`, `END` or `RESUME`"),
        ("A a\n", 1, 1, "expected `[X] state_id`"),
    ],
)
def test_parse_problems_are_located(text: str, line: int, column: int, fragment: str) -> None:
    problems = parse(text).problems
    assert len(problems) == 1
    assert (problems[0].line, problems[0].column) == (line, column)
    assert fragment in problems[0].message


def test_comments_and_blank_lines_are_ignored() -> None:
    topology = parse("# the map\n\nSTART -> [A] a\n\n[A] a -> END  \n")
    assert topology.problems == []
    assert [(e.source, e.target, e.label) for e in topology.edges] == [
        (START, "a", None),
        ("a", "END", None),
    ]


@pytest.mark.parametrize("name", ["medical_checkin", "assistant", "request_lifecycle"])
def test_mermaid_draws_every_state_and_edge(name: str) -> None:
    from cgraph.spec.topology import mermaid

    graph = load_graph(GRAPHS / f"{name}.yaml")
    lines = mermaid(graph).splitlines()
    assert lines[0] == "flowchart TD"
    nodes = [line for line in lines if '"' in line and "-->" not in line]
    drawn = {line.split('"')[1] for line in nodes}
    anywhere = {"ANY"} if graph.global_exits or graph.limits.on_limit else set()
    assert drawn == {*graph.states, "START", "END", *anywhere}
    assert sum("-->" in line for line in lines) == len(graph_edges(graph))
    opening = {"action": '["', "decision": '{"', "recall": '[("', "annotation": '>"'}
    for state_id, state in graph.states.items():  # the shape tells the state's type
        if state.type in opening:
            assert any(f'{opening[state.type]}{state_id}"' in line for line in nodes)


def test_global_exits_on_limit_when_edges_and_cross_graph_targets_round_trip() -> None:
    graph = load_graph(FIXTURES / "lint" / "flows.yaml")
    text = derive_topology(graph)
    assert "ANY(The user asks to cancel.) -> [A] done" in text
    assert "  (when party_size > 12) -> [A] done" in text
    assert "  (The user wants the sub-flow now.) -> flows_parts/sub.yaml#only" in text
    parsed = parse(text)
    assert parsed.problems == []
    assert parsed.edge_set() == _edges(graph)


def test_resume_and_resumable_exits_are_written_and_read_back() -> None:
    graph = load_graph(GRAPHS / "contacts.yaml")
    text = derive_topology(graph)
    assert "ANY(The user wants to add a new contact.) <-> [G] add_contact" in text
    assert "[N] show_contacts -> RESUME" in text
    topology = parse(text)
    assert topology.problems == []
    assert Edge("show_contacts", "RESUME", None, topology.edges[-2].line) in topology.edges
    resumable = {(e.source, e.target) for e in topology.edges if e.resume}
    assert resumable == {(ANY, "add_contact"), (ANY, "remove_contact"), (ANY, "list_contacts")}
    assert parse("[A] ask\n  (fees) <-> [A] fees\n").edges == [Edge("ask", "fees", "fees", 2, True)]
