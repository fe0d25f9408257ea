"""A graph is not a shell: what a graph file may reach, through the real commands.

A tool handler comes from a Python file in the graph's folder, or from a module the
person running cgraph allowed (`--allow-module`, `CGRAPH_ALLOW_MODULES`); a graph file a
graph hands over to stays in the root graph's folder, or in one allowed (`--allow-path`,
`CGRAPH_ALLOW_PATHS`). Lint reports each violation located, `cgraph run` and `cgraph
test` refuse the graph, and the library's loader refuses it too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import GraphError
from cgraph.session import Session
from tests.commands import environment, ran
from tests.serving import serving, start

SHELL = """\
cgraph: 1
name: shell
start: run_it
tools:
  - {name: shell, handler: "subprocess:getoutput", parameters: {type: object}}
states:
  run_it:
    type: side_effect
    objective: Run it.
    tool: shell
    arguments: {cmd: "touch ran.marker"}
    next_state: END
"""
SUB = """\
cgraph: 1
name: sub
start: s
states:
  s:
    type: action
    objective: Talk.
    actions: [Talk.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Be polite.]
    say: In the sub-graph.
    exit_conditions:
      - {description: The user leaves., next_state: END}
"""
HAND_OVER = """\
cgraph: 1
name: root
start: hand
states:
  hand:
    type: graph
    objective: Hand over.
    graph: {target}
    next_state: END
"""


def cgraph(folder: Path, *args: str, lines: tuple[str, ...] = (), **env: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "cgraph", *args]
    done = ran(command, lines, cwd=folder, env=environment(**env), timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def handing_out(tmp_path: Path, target: str = "../elsewhere/sub.yaml") -> tuple[Path, Path, Path]:
    """(root, elsewhere, root/root.yaml): a graph handing over to `target`, and the
    sub-graph in `elsewhere`, a folder beside the root's."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "sub.yaml").write_text(SUB, encoding="utf-8")
    graph = root / "root.yaml"
    graph.write_text(HAND_OVER.format(target=target), encoding="utf-8")
    return root, elsewhere, graph


def codes(folder: Path, graph: Path, *more: str, **env: str) -> list[str]:
    command = [sys.executable, "-m", "cgraph", "lint", "-f", "json", str(graph), *more]
    done = ran(command, cwd=folder, env=environment(**env), timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return [d["code"] for d in json.loads(done.stdout)]


def test_a_handler_from_elsewhere_is_refused_until_it_is_allowed(tmp_path: Path) -> None:
    graph = tmp_path / "shell.yaml"
    graph.write_text(SHELL, encoding="utf-8")
    assert codes(tmp_path, graph) == ["handler-not-allowed"]
    code, out = cgraph(tmp_path, "run", str(graph), "--store", "s", lines=("hi",))
    assert code == 1 and "handler-not-allowed" in out
    assert not (tmp_path / "ran.marker").exists()  # nothing ran
    assert codes(tmp_path, graph, "--allow-module", "subprocess") == []
    allowed = ("--allow-module", "subprocess")
    code, out = cgraph(tmp_path, "run", str(graph), "--store", "s", *allowed, lines=("hi",))
    assert code == 0 and (tmp_path / "ran.marker").exists(), out  # allowed, it is trusted code
    (tmp_path / "ran.marker").unlink()
    assert codes(tmp_path, graph, CGRAPH_ALLOW_MODULES="json,subprocess") == []


@pytest.mark.parametrize("target", ["../elsewhere/sub.yaml", "ABSOLUTE", "linked.yaml"])
def test_a_graph_file_outside_the_root_folder_is_refused_until_it_is_allowed(
    tmp_path: Path, target: str
) -> None:
    named = str(tmp_path / "elsewhere" / "sub.yaml") if target == "ABSOLUTE" else target
    root, elsewhere, graph = handing_out(tmp_path, named)
    if target == "linked.yaml":  # a link in the folder that leads out of it
        (root / "linked.yaml").symlink_to(elsewhere / "sub.yaml")
    assert codes(root, graph) == ["graph-outside"]
    code, out = cgraph(root, "run", str(graph), "--store", "s", lines=("hi",))
    assert code == 1 and "graph-outside" in out and "In the sub-graph." not in out
    assert codes(root, graph, "--allow-path", str(elsewhere)) == []
    allowed = ("--allow-path", str(elsewhere))
    code, out = cgraph(root, "run", str(graph), "--store", "s", *allowed, lines=("hi",))
    assert code == 0 and "In the sub-graph." in out, out
    assert codes(root, graph, CGRAPH_ALLOW_PATHS=str(elsewhere)) == []


def test_serve_takes_the_allowances_and_studio_and_lsp_offer_them(tmp_path: Path) -> None:
    root, elsewhere, graph = handing_out(tmp_path)
    allowed = ("--allow-path", str(elsewhere))
    script = tmp_path / "script.json"
    script.write_text('{"*": {"exit": "stay", "reason": "here"}}', encoding="utf-8")
    served = (str(graph), "--store", str(tmp_path / "s"), "--model", f"scripted:{script}")
    refused = start(*served, folder=tmp_path, ready=False)
    assert refused.process.wait(120) == 1
    assert "leaves the root graph's folder" in refused.output()
    with serving(*served, *allowed, folder=tmp_path) as server, server.client() as client:
        sid = client.post("/v1/sessions", json={"graph": "root"}).json()["session"]
        turn = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}).json()
        assert turn["path"][-1].endswith("sub.yaml#s") and turn["state"] == turn["path"][-1], turn
    for command in ("studio", "lsp"):  # each starts a server of its own: their options
        code, out = cgraph(root, command, "--help")
        assert code == 0 and all(f in out for f in ("--allow-path", "--allow-module")), out
        assert "--max-file-size" in out


def test_lint_never_opens_a_file_a_graph_names_outside_its_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("cgraph: 1\n", encoding="utf-8")
    secret.chmod(0)  # read it, and lint would say it cannot
    root = tmp_path / "root"
    root.mkdir()
    graph = root / "root.yaml"
    graph.write_text(HAND_OVER.format(target=str(secret)), encoding="utf-8")
    code, out = cgraph(root, "lint", str(graph))
    assert code == 1 and "graph-outside" in out and "unreadable" not in out


def test_the_library_refuses_it_too_without_lint(tmp_path: Path) -> None:
    *_, graph = handing_out(tmp_path)
    session = Session.start(graph, model=ScriptedModel({}))
    with pytest.raises(GraphError, match="leaves the root graph's folder"):
        session.send("hi")


def test_cgraph_test_fails_on_it_and_its_cases_run_no_code_from_elsewhere(tmp_path: Path) -> None:
    talk = SUB.split("states:\n")[1]  # the sub-graph's one talking state, `s`
    shell = SHELL.replace("next_state: END", "next_state: s") + talk
    (tmp_path / "shell.yaml").write_text(shell, encoding="utf-8")
    (tmp_path / "shell.test.yaml").write_text(
        "cgraph-test: 1\ngraph: shell.yaml\ncases:\n  - {name: runs, turns: [{user: hi}]}\n",
        encoding="utf-8",
    )
    code, out = cgraph(tmp_path, "test", "shell.test.yaml")
    assert code == 1 and "handler-not-allowed" in out
    assert not (tmp_path / "ran.marker").exists()  # the loader refused it in the case too
