"""Coverage of the routes the runtime takes by itself: a state's `on_limit` and `on_error`
and the graph's `limits.on_limit` are items of the graph, counted when a run takes them,
located at their declaration, and shown by every report format and the picture."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cgraph.draw.picture import Highlight, dot_source
from cgraph.spec.load import load_graph
from cgraph.spec.read import read_file
from cgraph.spec.topology import ANY
from cgraph.testing.coverage import GraphCoverage, coverage
from cgraph.testing.html import report
from cgraph.testing.reporters import REPORTERS
from cgraph.testing.runner import FileResult, Options, Runner

ACTION = (
    "    type: action\n    objective: Ask.\n    actions: [Ask.]\n"
    "    intra_state_navigation_guidelines: [Stay.]\n"
    "    action_guidelines: [Short.]\n    boundary_constraints: [None.]\n"
)
# `ask` and `name` each route their own `max_visits` to the desk, and the graph routes
# `max_reflections` there too: three routes to one target, told apart by what was capped.
GRAPH = f"""\
cgraph: 1
name: tries
start: ask
limits:
  max_reflections: 1
  on_limit: {{max_reflections: desk}}
states:
  ask:
{ACTION}    max_visits: 2
    on_limit: desk
    exit_conditions:
      - {{description: The code is wrong., next_state: retry, examples: [wrong]}}
      - {{description: The user gives a name instead., next_state: name, examples: [name]}}
      - {{description: The user wants it reviewed., next_state: think, examples: [review]}}
  retry:
    type: annotation
    objective: Count a wrong code.
    next_state: ask
  name:
{ACTION}    max_visits: 1
    on_limit: desk
    exit_conditions:
      - {{description: The name is wrong., next_state: name_again, examples: [wrong]}}
  name_again:
    type: annotation
    objective: Count a wrong name.
    next_state: name
  think:
    type: reflection
    objective: Review.
    reflection_guidelines: [Review.]
    next_state: think_more
  think_more:
    type: reflection
    objective: Review again.
    reflection_guidelines: [Review again.]
    next_state: ask
  desk:
    type: annotation
    objective: Hand over to the desk.
    say: The front desk will help you.
    next_state: END
"""
# A re-entered action state asks the model again within the turn: it stays the second time.
WRONG = "{exit: retry, reason: wrong}"
ASKED = "{exit: stay, reason: asked, reply: Try again.}"
ASK_ROUTE = ("ask", "on limit max_visits")
NAME_ROUTE = ("name", "on limit max_visits")
REFLECTIONS_ROUTE = (ANY, "on limit max_reflections")


def run(tmp_path: Path, script: str, cases: str) -> list[FileResult]:
    graph = tmp_path / "tries.yaml"
    graph.write_text(GRAPH)
    tests = tmp_path / "tries.test.yaml"
    head = f"cgraph-test: 1\ngraph: {graph}\nmodel:\n  scripted:\n{script}"
    tests.write_text(f"{head}cases:\n{cases}")
    results = Runner(Options()).run_paths([tests])
    assert not any(f.problems for f in results), [f.problems for f in results]
    assert all(r.passed for f in results for r in f.runs), results
    return results


TRIES = f"    ask: [{WRONG}, {ASKED}, {WRONG}]\n"
THREE_TRIES = """\
  - name: three wrong codes go to the desk
    turns:
      - user: wrong
        expect: {state: ask}
      - user: wrong
        expect: {state: END, completed: true, reply_contains: front desk}
"""
ONE_TRY = """\
  - name: one wrong code asks again
    turns:
      - user: wrong
        expect: {state: ask}
"""


def covered(tmp_path: Path, cases: str, script: str = TRIES) -> GraphCoverage:
    (graph,) = coverage(run(tmp_path, script, cases))
    return graph


def test_a_state_s_on_limit_is_an_item_of_the_graph_once_declared(tmp_path: Path) -> None:
    graph = covered(tmp_path, ONE_TRY)
    assert {ASK_ROUTE, NAME_ROUTE, REFLECTIONS_ROUTE} <= set(graph.exits)
    assert len(graph.exits) == 3 + 3 + 1 + 1 + 1 + 1 + 1 + 1  # exits, then routes


def test_a_case_that_runs_out_of_tries_takes_the_state_s_own_route(tmp_path: Path) -> None:
    graph = covered(tmp_path, THREE_TRIES)
    assert ASK_ROUTE in graph.taken
    # the same target, but neither the other state's route nor the graph's was taken
    assert NAME_ROUTE not in graph.taken and REFLECTIONS_ROUTE not in graph.taken
    assert ("retry", "on_limit") not in graph.taken  # keyed by the state capped, not left


def test_a_case_that_stays_within_its_tries_leaves_the_route_uncovered(
    tmp_path: Path,
) -> None:
    graph = covered(tmp_path, ONE_TRY)
    assert ASK_ROUTE not in graph.taken
    (missing,) = [u for u in graph.uncovered if (u.state, u.exit) == ASK_ROUTE]
    where = read_file(tmp_path / "tries.yaml").locate(("states", "ask", "on_limit"))
    assert (missing.line, missing.column) == where
    assert missing.name == "on limit max_visits of `ask` → `desk`"
    assert missing.kind == "on_limit" and not missing.is_global


def test_the_graph_s_on_limit_is_taken_once_for_the_graph(tmp_path: Path) -> None:
    cases = """\
  - name: two reflections in a turn go to the desk
    turns:
      - user: review
        expect: {state: END, completed: true, reply_contains: front desk}
"""
    script = """\
    ask: {exit: think, reason: review}
    think: {note: looked, exit: think_more, reason: more}
    think_more: {note: looked again, exit: ask, reason: done}
"""
    graph = covered(tmp_path, cases, script)
    assert REFLECTIONS_ROUTE in graph.taken
    assert ASK_ROUTE not in graph.taken and NAME_ROUTE not in graph.taken


def test_the_other_state_s_route_to_the_same_target_is_its_own(tmp_path: Path) -> None:
    cases = """\
  - name: a wrong name goes to the desk at once
    turns:
      - user: name
        expect: {state: name}
      - user: wrong
        expect: {state: END, completed: true}
"""
    script = f"""\
    ask: {{exit: name, reason: a name}}
    name: [{ASKED}, {{exit: name_again, reason: wrong}}]
"""
    graph = covered(tmp_path, cases, script)
    assert NAME_ROUTE in graph.taken and ASK_ROUTE not in graph.taken


def test_an_uncovered_graph_route_is_named_and_located_at_its_guard(tmp_path: Path) -> None:
    graph = covered(tmp_path, THREE_TRIES)
    (missing,) = [u for u in graph.uncovered if u.is_global]
    assert missing.name == "on limit max_reflections → `desk`"
    where = read_file(tmp_path / "tries.yaml").locate(("limits", "on_limit", "max_reflections"))
    assert (missing.line, missing.column) == where


def formatted(name: str, results: list[FileResult], covered: list[GraphCoverage]) -> str:
    out = io.StringIO()
    REPORTERS[name](out).finish(results, covered)
    return out.getvalue()


def test_every_format_names_the_route_no_case_takes(tmp_path: Path) -> None:
    results = run(tmp_path, TRIES, ONE_TRY)
    graphs = coverage(results)
    (missing,) = [u for u in graphs[0].uncovered if (u.state, u.exit) == ASK_ROUTE]
    line = f"{graphs[0].graph}:{missing.line}:{missing.column} on limit max_visits of `ask`"
    assert f"{line} → `desk` not taken" in formatted("text", results, graphs)
    document = json.loads(formatted("json", results, graphs))
    uncovered = document["coverage"][0]["uncovered"]
    (entry,) = [u for u in uncovered if (u["state"], u["exit"]) == ASK_ROUTE]
    assert (entry["state"], entry["kind"], entry["target"]) == ("ask", "on_limit", "desk")
    assert entry["name"] == missing.name and entry["line"] == missing.line
    junit = ET.fromstring(formatted("junit", results, graphs))
    (suite,) = [s for s in junit.iter("testsuite") if s.get("name") == "coverage"]
    assert f"{line} → `desk` not taken" in (suite.findtext("system-out") or "")
    github = formatted("github", results, graphs)
    assert f"line={missing.line},col={missing.column}" in github
    assert "on limit max_visits of `ask` → `desk` is taken by no test case" in github
    page = report(results, graphs)
    assert "on limit max_visits of <b>ask</b> → <b>desk</b> is taken by no case" in page


GRAPHS_ROUTES = [
    ("ask", "desk", ASK_ROUTE),
    ("name", "desk", NAME_ROUTE),
    (ANY, "desk", REFLECTIONS_ROUTE),
]


@pytest.mark.parametrize(("source", "target", "key"), GRAPHS_ROUTES)
def test_the_picture_draws_each_route_dotted_and_marks_it(
    tmp_path: Path, source: str, target: str, key: tuple[str, str]
) -> None:
    (tmp_path / "tries.yaml").write_text(GRAPH)
    graph = load_graph(tmp_path / "tries.yaml")
    label = f'label="{key[1]}"'

    def edge(highlight: Highlight | None) -> str:
        (line,) = [
            x
            for x in dot_source(graph, highlight).splitlines()
            if x.startswith(f'  "{source}" -> "{target}"') and label in x
        ]
        return line

    assert "style=dotted" in edge(None)
    taken = edge(Highlight(frozenset({key}), frozenset()))
    assert "penwidth=2.4" in taken and "style=dotted" in taken
    assert "#dc2626" in edge(Highlight(frozenset(), frozenset()))


TURNS_GRAPH = f"""\
cgraph: 1
name: turns
start: ask
states:
  ask:
{ACTION}    max_turns: 2
    on_limit: desk
    exit_conditions:
      - {{description: The user gives the code., next_state: END, examples: ["1234"]}}
  desk:
    type: annotation
    objective: Hand over to the desk.
    say: The front desk will help you.
    next_state: END
"""


def test_a_state_that_caps_its_turns_names_its_route_for_them(tmp_path: Path) -> None:
    graph = tmp_path / "turns.yaml"
    graph.write_text(TURNS_GRAPH)
    tests = tmp_path / "turns.test.yaml"
    tests.write_text(
        f"cgraph-test: 1\ngraph: {graph}\nmodel:\n  scripted:\n    ask: {ASKED}\ncases:\n"
        "  - name: two turns without the code go to the desk\n    turns:\n"
        "      - {user: hmm, expect: {state: ask}}\n      - {user: hmm, expect: {state: ask}}\n"
        "      - {user: hmm, expect: {state: END, reply_contains: front desk}}\n"
    )
    results = Runner(Options()).run_paths([tests])
    assert all(r.passed for f in results for r in f.runs), results
    (covered_graph,) = coverage(results)
    assert ("ask", "on limit max_turns") in covered_graph.taken, covered_graph.taken
    assert [(u.state, u.exit) for u in covered_graph.uncovered] == [("ask", "END")]
