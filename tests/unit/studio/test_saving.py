"""A studio conversation saved as a test case: each turn's path and end expected, cases
appended under unique names, a file that would not load left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.serve.problems import Problem
from cgraph.spec.limits import ReadLimits
from cgraph.spec.testfile import load_tests
from cgraph.studio.saving import default_file, save
from cgraph.studio.workspace import Workspace


def talked(workspace: Workspace, *texts: str) -> str:
    sid = workspace.service.create("local", "talk", None)["session"]
    for text in texts:
        workspace.service.send("local", sid, text, None)
    return str(sid)


def saved(workspace: Workspace, graph_file: Path, sid: str, name: str) -> dict[str, object]:
    session = workspace.service.opened("local", sid)
    return save(session, str(graph_file), name, workspace.service.options.model)


def test_the_case_expects_each_turns_path_and_end(workspace: Workspace, graph_file: Path) -> None:
    answer = saved(workspace, graph_file, talked(workspace, "hi", "yes"), "two turns")
    target = default_file(graph_file)
    assert target == graph_file.parent / "talk.studio.test.yaml"
    assert answer["case"] == "two turns" and answer["turns"] == 2
    tests = load_tests(target)
    assert tests.graph == "talk.yaml" and str(tests.model).startswith("scripted:")
    (case,) = tests.cases
    assert [t.user for t in case.turns] == ["hi", "yes"]
    assert [(t.expect.state, t.expect.path) for t in case.turns] == [("talk", ("talk",))] * 2


def test_a_second_case_is_appended_under_a_name_of_its_own(
    workspace: Workspace, graph_file: Path
) -> None:
    (graph_file.parent / "tests").mkdir()
    for _ in range(2):
        saved(workspace, graph_file, talked(workspace, "hi"), "greeting")
    tests = load_tests(default_file(graph_file))
    assert tests.graph == "../talk.yaml"
    assert [c.name for c in tests.cases] == ["greeting", "greeting (2)"]


def test_nothing_said_or_a_broken_file_is_refused_and_the_file_kept(
    workspace: Workspace, graph_file: Path
) -> None:
    with pytest.raises(Problem, match="send a message first"):
        saved(workspace, graph_file, talked(workspace), "empty")
    target = default_file(graph_file)
    target.write_text("cgraph-test: 1\ngraph: talk.yaml\ncases: []\n")
    with pytest.raises(Problem, match="could not save the case"):
        saved(workspace, graph_file, talked(workspace, "hi"), "one")
    assert target.read_text() == "cgraph-test: 1\ngraph: talk.yaml\ncases: []\n"


def test_the_file_is_read_within_the_studios_limits(workspace: Workspace, graph_file: Path) -> None:
    saved(workspace, graph_file, talked(workspace, "hi"), "first")
    target = default_file(graph_file)
    kept = target.read_text()
    session = workspace.service.opened("local", talked(workspace, "hi"))
    with pytest.raises(Problem, match="file-too-large"):
        save(session, str(graph_file), "second", None, ReadLimits(len(kept.encode()) - 1))
    assert target.read_text() == kept
