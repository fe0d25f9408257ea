"""What the person running cgraph allows reaches the library as values: a `Trust` and a
`ReadLimits` given to `load_graph` (and lint), held by the session that runs the graph,
sent to its tool worker with each call. The environment is the command line's to read:
a library call that sets nothing allows nothing extra, whatever the environment says."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import GraphError
from cgraph.lint.walk import lint_paths
from cgraph.serve.options import ServeOptions
from cgraph.session import Sessions
from cgraph.spec.limits import MAX_FILE_BYTES, ReadLimits
from cgraph.spec.load import load_graph
from cgraph.spec.trust import Trust, trust_from, trust_of
from tests.unit.runtime._runtime import stay

PROBE = "def hello():\n    return 'hello from the allowed module'\n"
CALLS = """\
cgraph: 1
name: calls
start: apply
tools:
  - {{name: probe, handler: "{module}:hello", isolation: {isolation}}}
states:
  apply:
    type: side_effect
    objective: Call the installed module.
    tool: probe
    result: outcome
    next_state: b
  b:
    type: action
    objective: Say it is done.
    actions: [Say it is done.]
    intra_state_navigation_guidelines: [Stay.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Be polite.]
    exit_conditions:
      - {{description: The user leaves., next_state: END}}
"""
SUB = """\
cgraph: 1
name: sub
start: s
states:
  s: {type: annotation, objective: Pass., next_state: END}
"""
HAND_OVER = """\
cgraph: 1
name: root
start: hand
states:
  hand: {type: graph, objective: Hand over., graph: ../elsewhere/sub.yaml, next_state: END}
"""


def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str) -> Path:
    """A graph calling `hello` of a module on the Python path, not in the graph's folder."""
    module = f"trusted_probe_{isolation}"
    lib, folder = tmp_path / "lib", tmp_path / "graph"
    lib.mkdir()
    folder.mkdir()
    (lib / f"{module}.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(lib))
    path = folder / "calls.yaml"
    path.write_text(CALLS.format(module=module, isolation=isolation), encoding="utf-8")
    return path


def outcome(tmp_path: Path, graph_path: Path, trust: Trust | None) -> object:
    """The tool's result after one turn, or the error its call failed with."""
    sessions = Sessions(tmp_path / "store", model=ScriptedModel({"b": stay("done")}))
    session = sessions.start(load_graph(graph_path, trust=trust))
    try:
        session.send("hi")
        calls = [e.data for e in session.log.events() if e.kind == "tool_call"]
        failed = [c["error"] for c in calls if c["status"] == "failed"]
        return failed[0] if failed else session.view.variables.get("outcome")
    finally:
        session.close()


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_library_call_with_trust_runs_a_handler_from_the_allowed_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    monkeypatch.delenv("CGRAPH_ALLOW_MODULES", raising=False)
    path = installed(tmp_path, monkeypatch, isolation)
    allowed = Trust(modules=(f"trusted_probe_{isolation}",))
    # In a tool worker too: the trust travels with the call, not in the worker's environment.
    assert outcome(tmp_path, path, allowed) == "hello from the allowed module"


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_library_call_without_trust_refuses_it_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    path = installed(tmp_path, monkeypatch, isolation)
    monkeypatch.setenv("CGRAPH_ALLOW_MODULES", f"trusted_probe_{isolation}")  # the CLI's only
    assert "nor an allowed module" in str(outcome(tmp_path, path, None))


def test_lint_allows_the_module_it_is_given_and_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = installed(tmp_path, monkeypatch, "thread")
    monkeypatch.setenv("CGRAPH_ALLOW_MODULES", "trusted_probe_thread")
    refused = [d.code for d in lint_paths([path]).diagnostics]
    allowed = lint_paths([path], trust=Trust(modules=("trusted_probe_thread",))).diagnostics
    assert "handler-not-allowed" in refused
    assert "handler-not-allowed" not in [d.code for d in allowed]


def test_a_sub_graph_elsewhere_is_entered_only_with_the_folder_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "sub.yaml").write_text(SUB, encoding="utf-8")
    path = root / "root.yaml"
    path.write_text(HAND_OVER, encoding="utf-8")
    monkeypatch.setenv("CGRAPH_ALLOW_PATHS", str(elsewhere))  # the CLI's only
    assert "graph-outside" in [d.code for d in lint_paths([path]).diagnostics]
    with pytest.raises(GraphError, match="leaves the root graph's folder"):
        outcome(tmp_path, path, None)
    allowed = Trust(paths=(elsewhere,))
    assert "graph-outside" not in [d.code for d in lint_paths([path], trust=allowed).diagnostics]
    assert outcome(tmp_path, path, allowed) is None  # entered, and ended there


def test_the_file_size_cap_is_the_value_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sub.yaml"
    path.write_text(SUB, encoding="utf-8")
    size = path.stat().st_size
    monkeypatch.setenv("CGRAPH_MAX_FILE_SIZE", "1")  # the CLI's only
    assert load_graph(path).name == "sub"
    with pytest.raises(GraphError) as refused:
        load_graph(path, limits=ReadLimits(size - 1))
    assert [d.code for d in refused.value.diagnostics] == ["file-too-large"]
    linted = lint_paths([path], limits=ReadLimits(size - 1)).diagnostics
    assert [d.code for d in linted] == ["file-too-large"]
    assert load_graph(path, limits=ReadLimits(size)).read_limits == ReadLimits(size)


def test_a_sub_graph_is_read_within_the_root_graphs_limits(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "sub.yaml").write_text(SUB + "#" * 2_000 + "\n", encoding="utf-8")
    path = root / "root.yaml"
    path.write_text(HAND_OVER, encoding="utf-8")
    allowed = Trust(paths=(elsewhere,))
    graph = load_graph(path, trust=allowed, limits=ReadLimits(1_000))
    sessions = Sessions(tmp_path / "store", model=ScriptedModel({}))
    with pytest.raises(GraphError, match="invalid context graph") as refused:
        sessions.start(graph).send("hi")
    assert "file-too-large" in [d.code for d in refused.value.diagnostics]


def test_the_defaults_allow_nothing_and_keep_the_shipped_cap() -> None:
    assert Trust() == Trust((), ()) and not Trust().allows_module("os")
    assert ReadLimits().file_size == MAX_FILE_BYTES


def test_trust_is_read_from_the_variables_text_and_merged_with_more(tmp_path: Path) -> None:
    given = trust_from("json, email", f"{tmp_path}")
    assert given.modules == ("json", "email") and given.paths == (tmp_path.resolve(),)
    more = given.also(["json", "yaml"], [tmp_path / "x"])
    assert more.modules == ("json", "email", "yaml")
    assert more.paths == (tmp_path.resolve(), (tmp_path / "x").resolve())
    assert more.allows_module("email.utils") and not more.allows_module("jsonschema")
    assert trust_of(more.as_data()) == more


def test_serve_options_carry_trust_and_limits_to_worker_processes(tmp_path: Path) -> None:
    options = ServeOptions(
        graphs=("g.yaml",), trust=Trust(("json",), (tmp_path,)), limits=ReadLimits(5_000)
    )
    assert ServeOptions.from_json(options.to_json()) == options
