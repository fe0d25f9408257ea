"""`cgraph test` hints at `say:` on the action states of the graphs it tests offline,
once per run however many files test a graph, and not for scripted or LLM runs."""

from __future__ import annotations

from pathlib import Path

from tests.commands import CGRAPH, finished, ran
from tests.unit.cli.test_repl import GRAPH

CASE = """\
cgraph-test: 1
graph: {graph}
{model}
cases:
  - name: {name}
    turns:
      - user: Hi, my card was stolen.
        expect: {{state: spoken}}
"""


def write(folder: Path, name: str, graph: str, model: str = "") -> None:
    text = CASE.format(graph=graph, model=model, name=name)
    (folder / f"{name}.test.yaml").write_text(text, encoding="utf-8")


def test_offline_tests_hint_at_say_once_per_run(tmp_path: Path) -> None:
    (tmp_path / "card_help.yaml").write_text(GRAPH, encoding="utf-8")
    scripted = GRAPH.replace("name: card_help", "name: card_scripted")
    (tmp_path / "card_scripted.yaml").write_text(scripted, encoding="utf-8")
    write(tmp_path, "first", "card_help.yaml")
    write(tmp_path, "second", "card_help.yaml")
    moves = "identify_issue: {exit: spoken, reason: stolen}, spoken: {exit: stay, reason: r}"
    answers = f"model: {{scripted: {{{moves}}}}}"
    write(tmp_path, "third", "card_scripted.yaml", answers)
    done = ran([str(CGRAPH), "test", str(tmp_path)], timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    hints = [line for line in done.stderr.splitlines() if line.startswith("hint:")]
    assert hints == [
        f"hint: {tmp_path / 'card_help.yaml'}:7:3 action state `identify_issue` has no `say:`; "
        "without an LLM its actions are shown as a stage direction; add `say:` with what the "
        "agent says here, for runs and tests without an LLM"
    ]


def test_each_hint_of_a_graph_with_several_shows_once(tmp_path: Path) -> None:
    bare = GRAPH.replace("    say: I've blocked your card.\n", "")
    assert bare != GRAPH
    (tmp_path / "card_help.yaml").write_text(bare, encoding="utf-8")
    for name in ("first", "second", "third"):
        write(tmp_path, name, "card_help.yaml")
    done = finished([str(CGRAPH), "test", str(tmp_path)], timeout=600)
    hints = [line for line in done.stderr.splitlines() if line.startswith("hint:")]
    graph = tmp_path / "card_help.yaml"
    assert [h.split(" has no `say:`")[0] for h in hints] == [
        f"hint: {graph}:7:3 action state `identify_issue`",
        f"hint: {graph}:16:3 action state `spoken`",
    ], done.stderr


def test_a_graph_beside_the_tests_folder_is_shown_from_the_working_folder(
    tmp_path: Path,
) -> None:
    bare = GRAPH.replace("    say: I've blocked your card.\n", "")
    (tmp_path / "card_help.yaml").write_text(bare, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    write(tmp_path / "tests", "first", "../card_help.yaml")
    write(tmp_path / "tests", "missing", "../elsewhere.yaml")
    done = ran([str(CGRAPH), "test", "tests"], cwd=tmp_path, timeout=600)
    hints = [line for line in done.stderr.splitlines() if line.startswith("hint:")]
    assert hints[0].startswith("hint: card_help.yaml:7:3 "), done.stderr
    assert "(looked for elsewhere.yaml)" in done.stdout + done.stderr, done.stdout
    assert ".." not in "".join(hints), done.stderr
