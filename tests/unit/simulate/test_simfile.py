from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.errors import GraphError
from cgraph.spec import simfile
from cgraph.spec.read import read_file
from cgraph.spec.schema import dumps
from cgraph.spec.simfile import load_sim_file, parse_sim
from tests.conftest import ROOT


@pytest.mark.parametrize(
    "path",
    [ROOT / "schemas" / "cgraph-sim.schema.json", ROOT / "cgraph/spec/data/cgraph-sim.schema.json"],
)
def test_published_schema_is_generated_from_the_model(path: Path) -> None:
    assert path.read_text() == dumps(simfile.generate()), "run `make schema`"


def test_a_sim_file_loads_with_its_defaults(tmp_path: Path) -> None:
    file = tmp_path / "a.sim.yaml"
    file.write_text("cgraph-sim: 1\ngraph: g.yaml\npersonas:\n  - name: ann\n")
    sim = load_sim_file(file)
    assert (sim.runs, sim.max_turns, sim.seed, sim.user) == (20, 30, 0, "offline")
    assert sim.personas[0].traits.patience is None
    assert sim.graph_path == tmp_path / "g.yaml" or sim.graph_path.name == "g.yaml"


def test_an_unknown_trait_is_located_with_the_allowed_keys(tmp_path: Path) -> None:
    file = tmp_path / "a.sim.yaml"
    file.write_text(
        "cgraph-sim: 1\ngraph: g.yaml\npersonas:\n  - name: ann\n    traits: {typo: 1}\n"
    )
    sim, found = parse_sim(read_file(file))
    assert sim is None
    [problem] = found
    assert (problem.line, problem.column, problem.code) == (5, 14, "unknown-key")
    assert "typos" in problem.hint


def test_a_share_out_of_range_and_a_wrong_version_are_errors(tmp_path: Path) -> None:
    file = tmp_path / "a.sim.yaml"
    file.write_text(
        "cgraph-sim: 2\ngraph: g.yaml\npersonas:\n  - {name: a, traits: {typos: 1.5}}\n"
    )
    with pytest.raises(GraphError) as raised:
        load_sim_file(file)
    assert [d.line for d in raised.value.diagnostics] == [1, 4]


def test_a_graph_file_is_not_a_sim_file(tmp_path: Path) -> None:
    _, found = parse_sim(read_file(ROOT / "graphs" / "medical_checkin.yaml"))
    assert [d.code for d in found] == ["not-a-sim-file"]
