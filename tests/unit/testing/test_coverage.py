"""Coverage of global exits: one exit of the graph, taken from any state, located at its
declaration, and shown by every report format."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from cgraph.draw.picture import Highlight, dot_source
from cgraph.spec.load import load_graph
from cgraph.spec.read import read_file
from cgraph.spec.topology import ANY
from cgraph.testing.coverage import GraphCoverage, coverage
from cgraph.testing.html import report
from cgraph.testing.reporters import REPORTERS
from cgraph.testing.runner import FileResult, Options, Runner
from tests.conftest import GRAPHS

LIFECYCLE = GRAPHS / "request_lifecycle.yaml"
HANDOFF = f"""\
cgraph-test: 1
graph: {LIFECYCLE}
model:
  scripted:
    idle: {{exit: handoff, reason: a person}}
    failed: {{exit: handoff, reason: a person}}
cases:
  - name: from idle
    start: {{state: idle}}
    turns:
      - user: Can I talk to a human?
        expect: {{completed: true}}
  - name: from failed
    start: {{state: failed}}
    turns:
      - user: Get me a person.
        expect: {{completed: true}}
"""
NO_HANDOFF = f"""\
cgraph-test: 1
graph: {LIFECYCLE}
model:
  scripted:
    idle: {{exit: END, reason: bye}}
cases:
  - name: leaving
    start: {{state: idle}}
    turns:
      - user: Bye.
        expect: {{completed: true}}
"""


def run(tmp_path: Path, text: str, name: str = "t.test.yaml") -> list[FileResult]:
    path = tmp_path / name
    path.write_text(text)
    results = Runner(Options()).run_paths([path])
    assert not any(f.problems for f in results), [f.problems for f in results]
    assert all(r.passed for f in results for r in f.runs), results
    return results


def test_a_global_exit_is_one_exit_of_the_graph_taken_from_any_state(tmp_path: Path) -> None:
    (graph,) = coverage(run(tmp_path, HANDOFF))
    globals_ = [e for e in graph.exits if e[0] == ANY]
    assert globals_ == [(ANY, "handoff")]  # once, not once per state offering it
    assert (ANY, "handoff") in graph.taken
    assert ("idle", "handoff") not in graph.taken and ("failed", "handoff") not in graph.taken
    own = sum(1 for e in graph.exits if e[0] != ANY)
    assert len(graph.exits) == own + 1
    assert not any(u.is_global for u in graph.uncovered)


def test_a_global_exit_no_case_takes_is_located_at_its_declaration(tmp_path: Path) -> None:
    (graph,) = coverage(run(tmp_path, NO_HANDOFF))
    (missing,) = [u for u in graph.uncovered if u.is_global]
    assert (missing.state, missing.exit) == (ANY, "handoff")
    assert (missing.line, missing.column) == read_file(LIFECYCLE).locate(("global_exits", 0))
    assert missing.name == "global exit `handoff`"
    assert (ANY, "handoff") in graph.exits and (ANY, "handoff") not in graph.taken


def test_taken_across_test_files_of_one_graph(tmp_path: Path) -> None:
    results = run(tmp_path, NO_HANDOFF) + run(tmp_path, HANDOFF, "u.test.yaml")
    (graph,) = coverage(results)
    assert (ANY, "handoff") in graph.taken


def test_a_global_exit_taken_inside_a_sub_graph_counts_for_the_graph_declaring_it(
    tmp_path: Path,
) -> None:
    text = f"""\
cgraph-test: 1
graph: {GRAPHS / "assistant.yaml"}
model:
  scripted:
    supervisor:
      - {{exit: research, reason: research}}
      - {{exit: stay, reason: routing, reply: What else?}}
    present_findings:
      - {{exit: stay, reason: answered, reply: It builds graphs.}}
      - {{exit: stopped, reason: stop}}
cases:
  - name: stop inside research
    start: {{state: supervisor}}
    turns:
      - user: what is LangGraph?
        expect: {{path_includes: [research.yaml#present_findings]}}
      - user: stop
        expect: {{exits: ["research.yaml#present_findings -> stopped", "stopped -> supervisor"]}}
"""
    graph, research = coverage(run(tmp_path, text))
    assert (ANY, "stopped") in graph.taken
    # The sub-graph has its own line, in its own names; its global exit is its parent's.
    assert research.graph.name == "research.yaml"
    assert research.entered == {"look_up", "present_findings"}
    assert research.taken == {("look_up", "present_findings")}
    assert ("present_findings", "look_up") in {(u.state, u.exit) for u in research.uncovered}


def test_a_state_exit_numbered_after_a_global_one_is_still_its_own(tmp_path: Path) -> None:
    """Where a global exit shares a state's target, the runtime numbers the state's exit
    `bye_2`; coverage still counts it as the state's `bye`, and not as the global exit."""
    graph_file = tmp_path / "g.yaml"
    graph_file.write_text(
        "cgraph: 1\nname: g\nstart: a\n"
        "global_exits:\n"
        "  - {description: The user wants to stop., next_state: bye, examples: [stop]}\n"
        "states:\n"
        "  a:\n    type: action\n    objective: Ask.\n    actions: [Ask.]\n"
        "    intra_state_navigation_guidelines: [Stay.]\n"
        "    action_guidelines: [Short.]\n    boundary_constraints: [None.]\n"
        "    exit_conditions:\n"
        "      - {description: The user is done., next_state: bye, examples: [done]}\n"
        "  bye:\n    type: annotation\n    objective: Close.\n    next_state: END\n"
    )
    text = f"""\
cgraph-test: 1
graph: {graph_file}
model:
  scripted:
    a: {{exit: bye_2, reason: done}}
cases:
  - name: done
    start: {{state: a}}
    turns:
      - user: done
        expect: {{exits: [bye_2, END]}}
"""
    (graph,) = coverage(run(tmp_path, text))
    assert ("a", "bye") in graph.taken and (ANY, "bye") not in graph.taken


def formatted(name: str, results: list[FileResult], covered: list[GraphCoverage]) -> str:
    out = io.StringIO()
    REPORTERS[name](out).finish(results, covered)
    return out.getvalue()


def test_every_format_shows_the_global_exit(tmp_path: Path) -> None:
    results = run(tmp_path, NO_HANDOFF)
    covered = coverage(results)
    (missing,) = [u for u in covered[0].uncovered if u.is_global]
    where = f"{covered[0].graph}:{missing.line}:{missing.column}"
    assert f"{where} global exit `handoff` not taken" in formatted("text", results, covered)
    document = json.loads(formatted("json", results, covered))
    (entry,) = [u for u in document["coverage"][0]["uncovered"] if u["global"]]
    expected = {"state": ANY, "exit": "handoff", "global": True, "kind": "global_exit"}
    named = {"target": "handoff", "name": "global exit `handoff`"}
    assert entry == {**expected, **named, "line": missing.line, "column": missing.column}
    junit = ET.fromstring(formatted("junit", results, covered))
    (suite,) = [s for s in junit.iter("testsuite") if s.get("name") == "coverage"]
    assert suite.get("tests") == "0"
    (prop,) = suite.iter("property")
    assert prop.get("value", "").endswith(f"({covered[0].percent:.1f}%)")
    assert f"{where} global exit `handoff` not taken" in (suite.findtext("system-out") or "")
    github = formatted("github", results, covered)
    assert "global exit `handoff` is taken by no test case" in github
    page = report(results, covered)
    assert "global exit <b>handoff</b> is taken by no case" in page


def test_the_picture_draws_each_global_exit_once_from_any() -> None:
    graph = load_graph(LIFECYCLE)
    dot = dot_source(graph)
    assert dot.count(f'"{ANY}" -> "handoff"') == 1
    taken = dot_source(graph, Highlight(frozenset({(ANY, "handoff")}), frozenset()))
    line = next(x for x in taken.splitlines() if x.startswith(f'  "{ANY}" -> "handoff"'))
    assert "penwidth=2.4" in line
    untaken = dot_source(graph, Highlight(frozenset(), frozenset()))
    line = next(x for x in untaken.splitlines() if x.startswith(f'  "{ANY}" -> "handoff"'))
    assert "style=dashed" in line


DETOUR_ROOT = """\
cgraph: 1
name: desk
start: ask
global_exits:
  - description: The user asks about fees.
    next_state: fees
    resume: true
states:
  ask:
    type: action
    objective: Learn what the user wants.
    actions: [Ask.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    say: What can I do?
    exit_conditions:
      - description: The user is done.
        next_state: END
  fees:
    type: graph
    objective: Answer about fees.
    graph: fees.yaml
    next_state: RESUME
"""
DETOUR_SUB = """\
cgraph: 1
name: fee_answers
start: answer
states:
  answer:
    type: annotation
    objective: Say the fees.
    say: There are no fees.
    next_state: END
"""
DETOUR_TESTS = """\
cgraph-test: 1
graph: desk.yaml
model:
  scripted:
    ask: [{exit: fees, reason: fees}, {exit: stay, reason: back, reply: What else?}]
cases:
  - name: a detour through a sub-graph comes back
    turns:
      - user: Are there fees?
        expect: {path: [ask, fees, fees.yaml#answer, ask], reply_contains: no fees}
"""


def test_a_graph_states_resume_is_taken_when_its_sub_graph_ends_an_interruption(
    tmp_path: Path,
) -> None:
    (tmp_path / "desk.yaml").write_text(DETOUR_ROOT)
    (tmp_path / "fees.yaml").write_text(DETOUR_SUB)
    (tmp_path / "desk.test.yaml").write_text(DETOUR_TESTS)
    (result,) = Runner(Options()).run_paths([tmp_path / "desk.test.yaml"])
    assert [r.passed for r in result.runs] == [True], result.runs
    desk = next(c for c in coverage([result]) if c.name == "desk")
    # The sub-graph's end took the conversation back: `fees`' `next_state: RESUME` held.
    assert ("fees", "RESUME") in desk.taken
    assert [u.name for u in desk.uncovered] == ["exit `END` of `ask`"]
