"""The runner in-process with scripted answers: phrasings, `-k`, `-x`, start states, and
coverage located at the exits' declarations."""

from __future__ import annotations

import io
from pathlib import Path

from cgraph.spec.read import read_file, read_text
from cgraph.spec.testfile import parse_tests
from cgraph.testing.cases import expand, selected
from cgraph.testing.coverage import coverage
from cgraph.testing.explain import divergence
from cgraph.testing.runner import Options, Runner, count
from cgraph.testing.suite import _exit_code
from tests.conftest import GRAPHS

LIFECYCLE = GRAPHS / "request_lifecycle.yaml"
TESTS = f"""\
cgraph-test: 1
graph: {LIFECYCLE}
model:
  scripted:
    idle: {{exit: END, reason: bye}}
    failed: {{exit: stay, reason: shown, reply: "Sorry."}}
cases:
  - name: leaving at once
    start: {{state: idle}}
    turns:
      - user: ["Nothing, bye.", Goodbye., Never mind.]
        expect: {{completed: true}}
  - name: a failed request stays
    start: {{state: failed, variables: {{attempt: 3}}}}
    turns:
      - user: hmm
        expect: {{state: failed, variables: {{attempt: 3}}, reply_contains: sorry}}
      - user: still here
        expect: {{state: idle}}
"""


def write(tmp_path: Path) -> Path:
    path = tmp_path / "lifecycle.test.yaml"
    path.write_text(TESTS)
    return path


def test_each_phrasing_is_its_own_run_and_failures_stop_their_case(tmp_path: Path) -> None:
    write(tmp_path)
    (result,) = Runner(Options()).run_paths([tmp_path])  # a folder is searched
    names = [r.name for r in result.runs]
    assert names[:3] == [
        "leaving at once",
        "leaving at once [turn 1: 'Goodbye.']",
        "leaving at once [turn 1: 'Never mind.']",
    ]
    failed = result.runs[-1]
    assert not failed.passed and len(failed.turns) == 2
    assert failed.turns[1].mismatches[0].message == "ended in `failed`, expected `idle`"
    assert count([result]) == (3, 1, 0)


def test_k_selects_and_x_stops_at_the_first_failure(tmp_path: Path) -> None:
    path = write(tmp_path)
    (only,) = Runner(Options(patterns=("*FAILED*",))).run_paths([path])
    assert [r.name for r in only.runs] == ["a failed request stays"] and only.skipped == 3
    runner = Runner(Options(stop_first=True))
    (first,) = runner.run_paths([path, path])
    assert runner.stopped and len(first.runs) == 4


def test_uncovered_exits_point_at_their_declarations(tmp_path: Path) -> None:
    (result,) = Runner(Options()).run_paths([write(tmp_path)])
    (graph,) = coverage([result])
    assert ("idle", "END") in graph.taken and ("failed", "END") not in graph.taken
    doc = read_file(LIFECYCLE)
    for miss in graph.uncovered:
        if miss.is_global:  # see test_coverage.py
            continue
        state = doc.data["states"][miss.state]
        if miss.kind in ("on_error", "on_limit"):  # see test_coverage_routes.py
            where = doc.locate(("states", miss.state, miss.kind))
        elif "exit_conditions" in state:
            index = [e["next_state"] for e in state["exit_conditions"]].index(miss.exit)
            where = doc.locate(("states", miss.state, "exit_conditions", index))
        else:
            where = doc.locate(("states", miss.state, "next_state"))
        assert (miss.line, miss.column) == where
    assert len(graph.uncovered) == len(graph.exits) - len(graph.taken)
    assert graph.percent == 100 * len(graph.taken) / len(graph.exits)


def test_a_pattern_is_a_substring_or_a_glob() -> None:
    tests, _ = parse_tests(read_text(TESTS))
    assert tests is not None
    run = expand(tests.cases[0])[0]
    assert selected(run, ()) and selected(run, ("LEAV",)) and selected(run, ("leav*once",))
    assert not selected(run, ("stays",))


STORING = f"""\
cgraph-test: 1
graph: {GRAPHS / "medical_checkin.yaml"}
user: ann
memories:
  - {{text: Ann walks for thirty minutes every morning., tier: personal}}
model:
  scripted:
    check_chest_pain: {{exit: stay, reason: asking, reply: Any chest pain?}}
    extract: {{memories: [{{tier: personal, text: Ann takes a beta blocker daily.}}]}}
cases:
  - name: what the turn says is stored as a memory
    start: {{state: check_chest_pain}}
    turns:
      - user: I take a beta blocker every day.
        expect: {{stored: [beta blocker], fallback: false}}
  - name: each case starts from the file's memories only
    start: {{state: check_chest_pain}}
    turns:
      - user: hello
        expect: {{stored: [beta blocker]}}
"""


def test_stored_memories_are_checked_in_a_real_store_reset_per_case(tmp_path: Path) -> None:
    path = tmp_path / "storing.test.yaml"
    path.write_text(STORING)
    (result,) = Runner(Options()).run_paths([path])
    assert [r.passed for r in result.runs] == [True, True], result.runs
    assert result.runs[0].turns[0].observed.stored == ("Ann takes a beta blocker daily.",)
    broken = STORING.replace("stored: [beta blocker], fallback", "stored: [walks], fallback")
    path.write_text(broken)
    (failed,) = Runner(Options()).run_paths([path])
    message = failed.runs[0].turns[0].mismatches[0].message
    assert message == "no memory stored with 'walks'"


SEEDED_TASK = f"""\
cgraph-test: 1
graph: {GRAPHS / "assistant.yaml"}
user: ann
memories:
  - {{text: Ann is moving the project notes into notes.md today., tier: task}}
model:
  scripted:
    supervisor: {{exit: stay, reason: asking, reply: What next?}}
cases:
  - name: a task-tier memory of the file is this session's context
    turns:
      - user: where are my project notes going?
        expect: {{recalled: [notes.md]}}
"""


def test_task_memories_of_a_test_file_are_the_tested_sessions_context(tmp_path: Path) -> None:
    path = tmp_path / "seeded.test.yaml"
    path.write_text(SEEDED_TASK)
    (result,) = Runner(Options()).run_paths([path])
    assert [r.passed for r in result.runs] == [True], result.runs


def test_a_failed_turn_names_each_decision_by_its_states_type(tmp_path: Path) -> None:
    write(tmp_path)
    (result,) = Runner(Options()).run_paths([tmp_path])
    last = result.runs[-1].turns[1]
    assert last.observed.steps == ("failed (action)",)
    assert last.why[0].startswith("failed (action) chose stay")


def test_a_path_expected_from_another_state_says_where_the_turn_began(tmp_path: Path) -> None:
    text = TESTS.split("cases:")[0] + (
        "cases:\n  - name: leaving\n    start: {state: idle}\n    turns:\n"
        "      - user: bye\n        expect: {path: [failed, END]}\n"
    )
    path = tmp_path / "t.test.yaml"
    path.write_text(text)
    (result,) = Runner(Options()).run_paths([path])
    (turn,) = result.runs[0].turns
    said = divergence(turn)
    assert said == "the turn began in `idle`; the expected path begins with `failed`", said


def test_a_missing_graph_is_located_and_a_graph_with_lint_errors_runs_and_fails(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.test.yaml"
    missing.write_text(TESTS.replace(f"graph: {LIFECYCLE}", "graph: ../nowhere.yaml"))
    broken = tmp_path / "g.yaml"
    text = LIFECYCLE.read_text().replace("next_state: planning", "next_state: planing", 1)
    assert text != LIFECYCLE.read_text()
    broken.write_text(text)
    (tmp_path / "tools").symlink_to(GRAPHS / "tools")
    linted = tmp_path / "broken.test.yaml"
    linted.write_text(TESTS.replace(f"graph: {LIFECYCLE}", "graph: g.yaml"))
    gone, bad = Runner(Options(("leaving at once",))).run_paths([missing, linted])
    assert not gone.runs and bad.runs and all(r.passed for r in bad.runs)
    (where,) = gone.problems
    assert (where.file, where.line, where.column) == (str(missing), 2, 8)
    assert where.message.startswith("graph `../nowhere.yaml` does not exist (looked for ")
    assert not bad.problems
    assert ("unknown-state", "g.yaml") in [(d.code, Path(d.file).name) for d in bad.lint]
    err = io.StringIO()
    assert _exit_code([bad], None, None, err) == 1  # even with every case passing
    assert "error unknown-state `next_state` names `planing`" in err.getvalue()


def test_a_graph_tested_by_several_files_is_linted_once(tmp_path: Path) -> None:
    broken = tmp_path / "g.yaml"
    broken.write_text(LIFECYCLE.read_text().replace("next_state: planning", "next_state: planing"))
    (tmp_path / "tools").symlink_to(GRAPHS / "tools")
    files = [tmp_path / f"{name}.test.yaml" for name in ("one", "two")]
    for file in files:
        file.write_text(TESTS.replace(f"graph: {LIFECYCLE}", "graph: g.yaml"))
    first, second = Runner(Options(("leaving at once",))).run_paths(files)
    assert first.lint and len(first.lint) == len(second.lint)
    # The very same diagnostics: the second file's graph was not linted again.
    assert all(a is b for a, b in zip(first.lint, second.lint, strict=True))


ROOT = """\
cgraph: 1
name: root
start: book
states:
  book:
    type: graph
    objective: Book a flight.
    graph: parts/flight.yaml
    next_state: booked
  booked:
    type: annotation
    objective: Say it is booked.
    say: "Booked to {{ destination }}."
    next_state: END
"""
SUB = """\
cgraph: 1
name: flight
start: ask_destination
returns: [destination]
slots:
  destination: {type: string}
states:
  ask_destination:
    type: action
    objective: Learn the destination.
    actions: [Ask where to.]
    intra_state_navigation_guidelines: [Stay until it is named.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    collect: [destination]
    say: Where to?
    exit_conditions:
      - next_state: END
"""
SUB_TESTS = """\
cgraph-test: 1
graph: root.yaml
model:
  scripted:
    parts/flight.yaml#ask_destination:
      {exit: stay, reason: named, reply: Noted., slots: {destination: Lima}}
cases:
  - name: a case begins in a state of a sub-graph
    start: {state: "parts/flight.yaml#ask_destination"}
    turns:
      - user: Lima
        expect:
          path: [parts/flight.yaml#ask_destination, book, booked]
          completed: true
          reply_contains: Booked to Lima
"""


def test_a_case_may_start_in_a_state_of_a_sub_graph(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()
    (tmp_path / "root.yaml").write_text(ROOT)
    (tmp_path / "parts" / "flight.yaml").write_text(SUB)
    (tmp_path / "sub.test.yaml").write_text(SUB_TESTS)
    (result,) = Runner(Options()).run_paths([tmp_path / "sub.test.yaml"])
    assert not result.problems and [r.passed for r in result.runs] == [True], result.runs
    (sub,) = [c for c in coverage([result]) if c.name == "flight"]
    assert sub.entered == {"ask_destination"}
