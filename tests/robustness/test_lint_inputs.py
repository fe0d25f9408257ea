"""Paths that are not graph files, through the real `cgraph lint`, `run` and `test`: a link
to `/dev/zero`, a FIFO, a sparse file of gigabytes, a link that leads back to itself —
named on the command line, found by a folder walk, named by a graph state, or as a tool's
handler file.

Only regular files are read, up to the size cap (20 MB; `--max-file-size`,
`CGRAPH_MAX_FILE_SIZE`): each refusal is a located diagnostic with its code, within the
probe's time and memory limits (30 s, 1.5 GB), never a hang, a `MemoryError` or a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.commands import environment
from tests.robustness.lint_probe import SECONDS, _limits, assert_survives

GRAPH = """\
cgraph: 1
name: g
start: a
states:
  a:
    type: action
    objective: Talk.
    actions: [Talk.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Be polite.]
    say: Hello.
    exit_conditions:
      - {description: The user leaves., next_state: END}
"""


def zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def sparse(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(3 * 1024**3)  # 3 GB of nothing on disk


def loop(path: Path) -> None:
    other = path.with_name("other_" + path.name)
    path.symlink_to(other.name)
    other.symlink_to(path.name)


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "zero": (zero, "not-a-file"),
    "fifo": (fifo, "not-a-file"),
    "sparse": (sparse, "file-too-large"),
    "loop": (loop, "link-loop"),
}


def codes_of(found: list[dict[str, object]]) -> list[object]:
    return [d["code"] for d in found]


def codes(found: list[dict[str, object]], name: str) -> list[tuple[object, object, object]]:
    return [(d["code"], d["line"], d["column"]) for d in found if Path(str(d["file"])).name == name]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_named_path_that_is_not_a_graph_file_is_refused_located(
    tmp_path: Path, kind: str
) -> None:
    make, code = HOSTILE[kind]
    make(tmp_path / "g.yaml")
    assert codes(assert_survives(tmp_path / "g.yaml"), "g.yaml") == [(code, 1, 1)]


def test_a_folder_walk_reports_each_and_lints_the_rest(tmp_path: Path) -> None:
    for kind, (make, _) in HOSTILE.items():
        make(tmp_path / f"{kind}.yaml")
    (tmp_path / "good.yaml").write_text(GRAPH, encoding="utf-8")
    found = assert_survives(tmp_path)
    assert codes(found, "zero.yaml") == codes(found, "fifo.yaml") == [("not-a-file", 1, 1)]
    assert codes(found, "loop.yaml") == [("link-loop", 1, 1)]
    assert codes(found, "good.yaml") == []


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_sub_graph_or_a_handler_file_that_is_not_a_file_is_refused_located(
    tmp_path: Path, kind: str
) -> None:
    make, code = HOSTILE[kind]
    make(tmp_path / "sub.yaml")
    make(tmp_path / "tools.py")
    parent = GRAPH.replace("next_state: END}", "next_state: inner}")
    parent += "  inner: {type: graph, objective: Hand over., graph: sub.yaml, next_state: END}\n"
    parent += "tools: [{name: t, handler: 'tools:t'}]\n"
    (tmp_path / "g.yaml").write_text(parent, encoding="utf-8")
    found = assert_survives(tmp_path / "g.yaml")
    if kind == "zero":  # the link leads out of the graph's folder: never followed
        assert codes(found, "sub.yaml") == [] and "graph-outside" in codes_of(found)
    else:
        assert codes(found, "sub.yaml") == [(code, 1, 1)]
    # A handler file is never read past the cap, nor waited on: one that is not a regular
    # file is not a module at all.
    (handler,) = (str(d["message"]) for d in found if d["code"] == "tool-handler")
    read = "cannot be read: the file is 3,221,225,472 bytes"
    assert read in handler if kind == "sparse" else "is found neither" in handler


def cgraph(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cgraph", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=SECONDS,
        preexec_fn=_limits,
        check=False,
        env=environment(**env),
    )


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_cgraph_run_and_test_refuse_it_before_reading(tmp_path: Path, kind: str) -> None:
    make, code = HOSTILE[kind]
    make(tmp_path / "g.yaml")
    run = cgraph("run", str(tmp_path / "g.yaml"), "--store", str(tmp_path / "s"))
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "regular file" in run.stderr or "leads back" in run.stderr or code in run.stderr
    case = "cgraph-test: 1\ngraph: g.yaml\ncases: [{name: c, turns: [{user: hi}]}]\n"
    (tmp_path / "g.test.yaml").write_text(case, encoding="utf-8")
    test = cgraph("test", str(tmp_path / "g.test.yaml"))
    assert test.returncode in (1, 2) and "Traceback" not in test.stderr + test.stdout


def test_the_cap_is_an_option_and_an_environment_variable(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text(GRAPH, encoding="utf-8")
    size = len(GRAPH.encode())
    over = cgraph("lint", "-f", "json", "--max-file-size", str(size - 1), str(tmp_path / "g.yaml"))
    assert over.returncode == 1
    assert [d["code"] for d in json.loads(over.stdout)] == ["file-too-large"]
    assert cgraph("lint", str(tmp_path / "g.yaml"), CGRAPH_MAX_FILE_SIZE="1k").returncode == 0
    refused = cgraph("lint", str(tmp_path / "g.yaml"), CGRAPH_MAX_FILE_SIZE=str(size - 1))
    assert refused.returncode == 1 and "file-too-large" in refused.stdout
    wrong = cgraph("lint", "--max-file-size", "lots", str(tmp_path / "g.yaml"))
    assert wrong.returncode == 2 and "'lots' is not a size" in wrong.stderr
