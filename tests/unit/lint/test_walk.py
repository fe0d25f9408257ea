from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.lint.codes import CODES
from cgraph.lint.structure import GraphContext
from cgraph.lint.walk import CHECKS, lint_file, lint_paths, topology_of
from cgraph.spec.load import load_graph
from cgraph.spec.topology import derive as derive_topology
from tests.conftest import FIXTURES, GRAPHS

LINT = FIXTURES / "lint"
CASES = sorted(p for p in LINT.glob("*.yaml") if p.with_suffix(".expected").exists())
# Codes no fixture file can produce: an unreadable path, a crash inside a check,
# `cgraph topology --check` on a graph without a topology, and a self-containing anchor
# (test_reader); each is tested on its own.
NOT_IN_FIXTURES = {"unreadable", "internal-error", "topology-missing", "yaml-recursive"}
NOT_IN_FIXTURES |= {"no-say", "offline-slot"}  # offline runs only: tests/unit/cli/test_repl.py
# Only a file without `cgraph-sim:` read as a sim file: tests/unit/simulate/test_simfile.py.
NOT_IN_FIXTURES |= {"not-a-sim-file"}
# A FIFO, a device, a link loop or a file of gigabytes: tests/robustness/test_lint_inputs.py.
NOT_IN_FIXTURES |= {"not-a-file", "file-too-large", "link-loop"}

ACTION = """\
    type: action
    objective: Talk with the user.
    actions: [Ask one question.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
"""


def _expected(case: Path) -> list[str]:
    return case.with_suffix(".expected").read_text().split("\n")[:-1]


def _found(case: Path) -> list[str]:
    lines = []
    for d in lint_paths([case]).diagnostics:
        rel = os.path.relpath(d.file, LINT)
        prefix = "" if rel == case.name else f"{rel}:"
        lines.append(f"{prefix}{d.line}:{d.column} {d.code}")
    return lines


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture_gives_exactly_its_expected_diagnostics(case: Path) -> None:
    assert _found(case) == _expected(case)


def test_every_code_has_a_fixture_or_its_own_test() -> None:
    covered = {line.split(" ")[1] for case in CASES for line in _expected(case)}
    assert covered | NOT_IN_FIXTURES == set(CODES)


# Lint's false alarms and misses (the flows-3 ports'), each a fixture above, with the code
# it is about and how often its file still gives it: an alarm's where the rule still holds
# (so a fix that silences the rule fails too), a miss's where it was missed.
CORPUS = {
    "alarm_nullable_argument": ("slot-maybe-unset", 0),
    "alarm_global_end": ("no-path-to-end", 0),
    "alarm_parent_variable": ("undefined-variable", 1),
    "alarm_set_literal": ("schema", 0),
    "alarm_set_slot_from_itself": ("uninitialised-variable", 1),
    "alarm_waits_filled_on_entry": ("exit-waits-for-slots", 1),
    "alarm_waits_said_given": ("exit-waits-for-slots", 2),
    "alarm_tool_result_when": ("result-maybe-unset", 1),
    "miss_resume_no_end": ("no-path-to-end", 2),
    "miss_result_unset": ("result-maybe-unset", 1),
    "miss_tool_result_unset": ("result-maybe-unset", 1),
}


def test_the_corpus_of_false_alarms_and_misses_is_kept() -> None:
    assert {p.stem for p in CASES if p.stem.startswith(("alarm_", "miss_"))} == set(CORPUS)
    for name, (code, times) in CORPUS.items():
        codes = [line.split(" ")[1] for line in _expected(LINT / f"{name}.yaml")]
        assert codes.count(code) == times, name


def test_every_fixture_diagnostic_has_a_hint_and_a_known_code() -> None:
    for case in CASES:
        for d in lint_paths([case]).diagnostics:
            assert d.hint, d
            assert d.code in CODES, d


def test_example_graphs_are_clean_even_with_strict() -> None:
    result = lint_paths([GRAPHS])
    assert result.diagnostics == []
    assert result.exit_code(strict=True) == 0
    assert {Path(f).name for f in result.files} >= {
        "medical_checkin.yaml",
        "companion.yaml",
        "assistant.yaml",
        "research.yaml",
        "request_lifecycle.yaml",
    }


def test_a_crashing_check_is_reported_and_the_other_checks_still_run() -> None:
    def broken(ctx: GraphContext) -> Iterator[Diagnostic]:
        raise KeyError("boom")

    result = lint_paths([LINT / "unreachable.yaml"], checks=(broken, *CHECKS))
    crash, *rest = result.diagnostics
    assert (crash.code, crash.line, crash.column) == ("internal-error", 1, 1)
    assert crash.message == "cgraph failed in broken: KeyError('boom')"
    assert [d.code for d in rest] == [d.code for d in lint_file(LINT / "unreachable.yaml")]
    assert result.exit_code() == 1


def test_did_you_mean_hints() -> None:
    by_code = {d.code + d.message: d.hint for d in lint_file(LINT / "unknown_state.yaml")}
    assert by_code["unknown-state`start` names `welcom`, which is not a state"].startswith(
        "did you mean `welcome`?"
    )
    hints = [d.hint for d in lint_file(LINT / "unknown_key.yaml")]
    assert hints[0].startswith("did you mean `exit_conditions`?")
    assert "allowed keys are" in hints[0]


def test_did_you_mean_looks_past_case() -> None:
    from cgraph.spec.load import closest

    assert closest("end", ["ask", "END"]) == "END"
    assert closest("Check_Meds", ["check_meds", "check_pain"]) == "check_meds"
    assert closest("welcom", ["welcome"]) == "welcome" and closest("zzz", ["welcome"]) is None


def _graph(tmp_path: Path, states: str, extra: str = "", name: str = "g.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"cgraph: 1\nname: g\nstart: ask\n{extra}states:\n{states}")
    return path


ASK = "  ask:\n" + ACTION + "    exit_conditions:\n"


def test_a_silent_loop_through_a_reflection_is_bounded(tmp_path: Path) -> None:
    states = ASK + (
        "      - {description: Go., next_state: tag}\n"
        "      - {description: Done., next_state: END}\n"
        "  tag: {type: annotation, objective: Tag., next_state: think}\n"
        "  think:\n    type: reflection\n    objective: Think.\n    exit_conditions:\n"
        "      - {description: Again., next_state: tag}\n"
        "      - {description: Enough., next_state: ask}\n"
    )
    assert lint_file(_graph(tmp_path, states)) == []
    capped = states.replace("type: reflection", "type: decision")
    assert [d.code for d in lint_file(_graph(tmp_path, capped))] == ["silent-cycle"]
    visits = "limits: {max_visits: {tag: 3}}\n"
    assert lint_file(_graph(tmp_path, capped, visits)) == []


def test_a_misspelt_target_is_one_error_not_one_per_state_behind_it(tmp_path: Path) -> None:
    states = ASK + (
        "      - {description: Go., next_state: tagg}\n"
        "  tag: {type: annotation, objective: Tag., next_state: think}\n"
        "  think: {type: annotation, objective: Think., next_state: END}\n"
    )
    (only,) = lint_file(_graph(tmp_path, states))
    assert only.code == "unknown-state" and "did you mean `tag`?" in only.hint
    far = states.replace("tagg", "elsewhere")  # nothing it could mean: the states are cut off
    codes = [d.code for d in lint_file(_graph(tmp_path, far))]
    assert codes == ["unknown-state", "unreachable-state", "unreachable-state"]


def test_a_graph_state_whose_subgraph_talks_is_not_silent(tmp_path: Path) -> None:
    (tmp_path / "sub.yaml").write_text(
        "cgraph: 1\nname: sub\nstart: ask\nstates:\n"
        + ASK
        + "      - {description: Done., next_state: END}\n"
    )
    states = ASK + (
        "      - {description: Go., next_state: hand}\n"
        "      - {description: Done., next_state: END}\n"
        "  hand: {type: graph, objective: Delegate., graph: sub.yaml, next_state: tag}\n"
        "  tag:\n    type: decision\n    objective: Route.\n    exit_conditions:\n"
        "      - {description: Again., next_state: hand}\n"
        "      - {description: Enough., next_state: ask}\n"
    )
    assert lint_file(_graph(tmp_path, states)) == []
    (tmp_path / "sub.yaml").write_text(
        "cgraph: 1\nname: sub\nstart: t\nstates:\n"
        "  t: {type: annotation, objective: Tag., next_state: END}\n"
    )
    assert [d.code for d in lint_file(_graph(tmp_path, states))] == ["silent-cycle"]


def test_a_subgraph_named_twice_is_linted_once(tmp_path: Path) -> None:
    (tmp_path / "sub.yaml").write_text("cgraph: 1\nname: sub\nstart: nowhere\nstates: {}\n")
    states = (
        ASK
        + "      - {description: Go., next_state: hand}\n"
        + ("  hand: {type: graph, objective: Delegate., graph: sub.yaml, next_state: END}\n")
    )
    result = lint_paths([_graph(tmp_path, states), tmp_path / "sub.yaml"])
    assert [Path(d.file).name for d in result.diagnostics] == ["sub.yaml"]
    assert len(result.files) == 2


def test_folder_walk_skips_files_without_a_cgraph_key_but_named_files_are_linted(
    tmp_path: Path,
) -> None:
    (tmp_path / "ci.yml").write_text("on: push\njobs: {}\n")
    (tmp_path / "data.json").write_text('{"cgraph": 1}')
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "g.yaml").write_text("cgraph: 1\n")
    (tmp_path / "notes.txt").write_text("cgraph: 1\n")
    result = lint_paths([tmp_path])
    assert result.files == [str(tmp_path / "data.json")]
    assert result.notes == [f"{tmp_path / 'ci.yml'}: skipped, no top-level `cgraph:` key"]
    named = lint_paths([tmp_path / "ci.yml"])
    assert [d.code for d in named.diagnostics] == ["not-a-graph", "yaml11-bool"]


def test_an_empty_folder_is_a_note_not_an_error(tmp_path: Path) -> None:
    result = lint_paths([tmp_path])
    assert result.notes == [f"{tmp_path}: no graph files found"]
    assert result.exit_code() == 0


def test_exit_codes(tmp_path: Path) -> None:
    assert lint_paths([LINT / "same_target.yaml"]).exit_code() == 0
    assert lint_paths([LINT / "same_target.yaml"]).exit_code(strict=True) == 1
    assert lint_paths([LINT / "unreachable.yaml"]).exit_code() == 1
    assert lint_paths([tmp_path / "missing.yaml", LINT / "unreachable.yaml"]).exit_code() == 2


def test_a_dangling_symlink_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "link.yaml").symlink_to(tmp_path / "gone.yaml")
    result = lint_paths([tmp_path / "link.yaml"])
    assert [d.code for d in result.diagnostics] == ["unreadable"]
    assert result.exit_code() == 2


def test_warnings_and_errors_are_counted() -> None:
    result = lint_paths([LINT / "tools.yaml"])
    assert (result.errors, result.warnings) == (6, 1)
    assert all(d.severity in (Severity.ERROR, Severity.WARNING) for d in result.diagnostics)


def test_topology_of_derives_or_checks() -> None:
    text, problems = topology_of(GRAPHS / "companion.yaml")
    assert problems == [] and text.startswith("START(returning user with memories)")
    text, problems = topology_of(GRAPHS / "companion.yaml", check=True)
    assert problems == [] and "agrees" in text
    _, problems = topology_of(LINT / "unreachable.yaml", check=True)
    assert [d.code for d in problems] == ["topology-missing"]
    _, problems = topology_of(LINT / "topology.yaml", check=True)
    assert {d.code for d in problems} >= {"topology-type", "topology-extra-edge"}
    _, problems = topology_of(LINT / "missing_key.yaml")
    assert [d.code for d in problems] == ["missing-key"]


def test_template_errors_inside_a_literal_block_point_at_the_line() -> None:
    found = {(d.line, d.column): d.message for d in lint_file(LINT / "templates.yaml")}
    assert found[(21, 9)] == "Jinja: No filter named 'nosuchfilter'."


def test_a_graph_state_naming_a_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "p.yaml").write_text(
        "cgraph: 1\nname: g\nstart: hand\nstates:\n  hand:\n    type: graph\n"
        "    objective: Hand over.\n    graph: sub\n    next_state: END\n"
    )
    (diag,) = lint_file(tmp_path / "p.yaml")
    assert diag.code == "graph-missing"
    assert diag.message.startswith("state `hand` hands over to `sub`, which is a folder")


def test_the_recursion_chain_is_named() -> None:
    (diag,) = lint_file(LINT / "recursive.yaml")
    chain = [LINT / "recursive.yaml", LINT / "sub" / "child.yaml", LINT / "recursive.yaml"]
    assert diag.message == "graph files include each other: " + " → ".join(map(str, chain))
    assert diag.file == str(LINT / "sub" / "child.yaml")


def test_only_graphs_skips_named_files_without_a_cgraph_key(tmp_path: Path) -> None:
    (tmp_path / "ci.yml").write_text("on: push\n")
    result = lint_paths([tmp_path / "ci.yml", GRAPHS / "research.yaml"], only_graphs=True)
    assert result.diagnostics == [] and result.exit_code(strict=True) == 0
    assert result.notes == [f"{tmp_path / 'ci.yml'}: skipped, no top-level `cgraph:` key"]


def test_variables_a_subgraph_declares_are_known_to_the_graph_that_enters_it(
    tmp_path: Path,
) -> None:
    # They join the session's variables when the sub-graph is entered, at any depth.
    (tmp_path / "inner.yaml").write_text(
        "cgraph: 1\nname: inner\nstart: t\nslots: {card: {type: string}}\nreturns: [card]\n"
        "states:\n"
        "  t: {type: annotation, objective: Tag., set: {card_ok: '{{ true }}'}, next_state: END}\n"
    )
    (tmp_path / "sub.yaml").write_text(
        "cgraph: 1\nname: sub\nstart: in\nvariables: {tries: 0}\nstates:\n"
        "  in: {type: graph, objective: Check., graph: inner.yaml, next_state: END}\n"
    )
    states = ASK + (
        "      - {description: Go., next_state: hand}\n"
        "  hand:\n    type: graph\n    objective: Check.\n    graph: sub.yaml\n"
        "    exit_conditions:\n"
        "      - {when: card_ok and tries < 3, next_state: done}\n"
        "      - {next_state: ask}\n"
        "  done: {type: annotation, objective: Say., next_state: END,\n"
        "         say: '{{ card }} {{ cardd }}'}\n"
    )
    (only,) = lint_file(_graph(tmp_path, states))
    assert only.code == "undefined-variable" and "`cardd`" in only.message
    assert "did you mean `card`?" in only.hint


@pytest.mark.parametrize("sub_first", [True, False], ids=["sub-first", "parent-first"])
def test_a_subgraph_reads_what_the_graph_entering_it_defines_in_any_order(
    sub_first: bool,
) -> None:
    # A sub-graph met on its own first (a folder walk's order) is linted again once a
    # caller brings the names it lacked; the fixture's `nobody` stays undefined either way.
    parent = LINT / "alarm_parent_variable.yaml"
    sub = LINT / "sub" / "order.yaml"
    result = lint_paths([sub, parent] if sub_first else [parent, sub])
    found = [(Path(d.file).name, d.code, d.message) for d in result.diagnostics]
    assert found == [("order.yaml", "undefined-variable", _NOBODY)]
    assert [Path(f).name for f in result.files] == ["order.yaml", "alarm_parent_variable.yaml"]


_NOBODY = "template uses `nobody`, which is never defined"


def test_a_misspelt_handler_module_gets_the_one_beside_the_graph(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "library_tools.py").write_text("def hold():\n    return 1\n")
    states = (
        "  ask:\n    type: side_effect\n    objective: Hold.\n    tool: hold\n    next_state: END\n"
    )
    tools = "tools:\n  - {name: hold, handler: 'tools.libary_tools:hold'}\n"
    (only,) = lint_file(_graph(tmp_path, states, tools))
    assert only.code == "tool-handler" and (only.line, only.column) == (5, 27)
    assert only.hint.startswith("did you mean `tools.library_tools`? put `tools/libary_tools.py`")


def test_a_test_file_whose_graph_is_missing_is_located_at_its_graph_key(tmp_path: Path) -> None:
    path = tmp_path / "t.test.yaml"
    path.write_text("cgraph-test: 1\ngraph: ../nowhere.yaml\ncases: []\n")
    (only,) = lint_file(path)
    assert (only.code, only.line, only.column) == ("graph-missing", 2, 8)
    assert (
        only.message
        == f"graph `../nowhere.yaml` does not exist (looked for {tmp_path.parent / 'nowhere.yaml'})"
    )


def _named_key(path: tuple[str | int, ...]) -> str:
    """The key that holds a reference: `limits.<key>.<name>`, a sim file's `says.<state>`,
    else the last key."""
    if path[0] == "limits":
        return str(path[1])
    if len(path) > 1 and path[-2] == "says":
        return "says"
    return next(str(p) for p in reversed(path) if isinstance(p, str))


def test_unknown_state_description_names_every_key_it_checks() -> None:
    keys = {
        _named_key(d.path)
        for case in CASES
        for d in lint_paths([case]).diagnostics
        if d.code == "unknown-state"
    }
    assert keys >= {"start", "next_state", "on_error", "max_visits", "on_limit", "except"}
    assert [k for k in sorted(keys) if k not in CODES["unknown-state"]] == []


def test_an_authored_topology_may_write_resume_and_resumable_exits(tmp_path: Path) -> None:
    graph = (GRAPHS / "contacts.yaml").read_text()
    topology = derive_topology(load_graph(GRAPHS / "contacts.yaml"))
    block = "topology: |\n" + "".join(
        f"  {line}\n" if line else "\n" for line in topology.split("\n")
    )
    for name in ("contacts.yaml", "add_contact.yaml", "remove_contact.yaml"):
        (tmp_path / name).write_text((GRAPHS / name).read_text())
    (tmp_path / "contacts.yaml").write_text(graph + "\n" + block)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "contact_tools.py").write_text(
        (GRAPHS / "tools" / "contact_tools.py").read_text()
    )
    assert lint_paths([tmp_path / "contacts.yaml"]).diagnostics == []
