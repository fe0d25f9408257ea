"""The graph files a studio watches: changes seen by their bytes, a broken edit shown and
the last good graph kept, a fixed one served with a new session or a replay."""

from __future__ import annotations

import os
from pathlib import Path

from cgraph.studio.workspace import Workspace

GREETING = """  greet:
    type: annotation
    objective: Note that the user was greeted.
    annotations: [greeted]
    next_state: talk
"""


def test_a_file_is_changed_by_its_bytes_not_its_time(
    workspace: Workspace, graph_file: Path
) -> None:
    studied = workspace.get(str(graph_file))
    assert studied.name == "talk" and studied.as_json()["lint"] == "clean"
    assert not studied.changed()
    os.utime(graph_file, ns=(1, 1))  # touched, the same bytes
    assert not studied.changed()
    graph_file.write_text(graph_file.read_text() + "\n# a note\n")
    assert studied.changed()


def test_a_broken_edit_shows_located_errors_and_keeps_the_last_good_graph(
    workspace: Workspace, graph_file: Path
) -> None:
    served = workspace.service.served["talk"]
    graph_file.write_text(graph_file.read_text().replace("start: talk", "start: tlak"))
    answer = workspace.reload("local", str(graph_file), None)
    assert answer["ok"] is False and "session" not in answer
    errors = [d for d in answer["graph"]["diagnostics"] if d["severity"] == "error"]
    assert [(d["line"], d["column"], d["code"]) for d in errors] == [(4, 8, "unknown-state")]
    assert errors[0]["hint"].startswith("did you mean `talk`?")
    assert "talk.yaml:4:8 error unknown-state" in errors[0]["text"]
    assert workspace.service.served["talk"] is served
    assert answer["graph"]["changed"] is False  # what was read is what is on disk


def test_a_missing_file_is_a_located_error_not_a_crash(
    workspace: Workspace, graph_file: Path
) -> None:
    graph_file.unlink()
    answer = workspace.reload("local", str(graph_file), None)
    assert [d["code"] for d in answer["graph"]["diagnostics"]] == ["file-missing"]


def test_a_fixed_graph_is_served_with_a_new_session(workspace: Workspace, graph_file: Path) -> None:
    graph_file.write_text(graph_file.read_text().replace("Answer briefly.", "Answer kindly."))
    answer = workspace.reload("local", str(graph_file), None)
    assert answer["ok"] is True and answer["graph"]["version"] == 2
    assert workspace.service.opened("local", answer["session"]).view.turn_number == 0


def test_a_replay_says_which_turns_now_differ(workspace: Workspace, graph_file: Path) -> None:
    service = workspace.service
    sid = service.create("local", "talk", None)["session"]
    for text in ("hi", "and again"):
        service.send("local", sid, text, None)
    edited = graph_file.read_text().replace("start: talk", "start: greet")
    graph_file.write_text(edited.replace("states:\n", "states:\n" + GREETING))
    answer = workspace.reload("local", str(graph_file), sid)
    assert answer["ok"] is True and answer["session"] != sid
    first, second = answer["replay"]
    assert first["differs"] == ["path"] and first["after"]["path"] == ["greet", "talk"]
    assert first["before"]["path"] == ["talk"]
    assert second["differs"] == [] and second["turn"] == 2
