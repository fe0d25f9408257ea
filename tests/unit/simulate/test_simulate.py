"""A simulation of the seeded help desk, in this process: the report names each seeded
fault, and the same inputs give the same `results.jsonl` bytes, resumed or not."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from cgraph.simulate.options import Options
from cgraph.simulate.run import run_seed
from cgraph.simulate.simulation import SimRequest, simulate_paths
from tests.conftest import FIXTURES

SIM = FIXTURES / "sim" / "helpdesk.sim.yaml"


def _simulate(out: Path, sim: Path = SIM, **given: object) -> tuple[int, dict, bytes]:
    request = SimRequest((sim,), Options(out=out, **given), output="json")  # type: ignore[arg-type]
    shown, err = io.StringIO(), io.StringIO()
    code = simulate_paths(request, shown, err)
    assert "Traceback" not in err.getvalue()
    folder = out / sim.name.removesuffix(".sim.yaml")
    summary = json.loads((folder / "summary.json").read_text())
    return code, summary, (folder / "results.jsonl").read_bytes()


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, bytes]:
    return _simulate(tmp_path_factory.mktemp("sim"))


def test_the_report_names_the_dead_end_the_loop_and_the_greeting_thief(
    helpdesk: tuple[int, dict, bytes],
) -> None:
    code, summary, _ = helpdesk
    assert code == 1  # personas fail: the thresholds did not hold
    assert {"state": "balance", "runs": 8} in summary["stuck"]
    cycles = [set(loop["cycle"]) for loop in summary["loops"]]
    assert {"order_problem", "lookup", "not_found"} in cycles
    pairs = {(p["state"], p["meant"], p["taken"]) for p in summary["suite"]["confusion"]}
    assert ("greet", "stay", "ANY -> operator") in pairs
    assert "balance -> resolved" in summary["unreached_exits"]


def test_personas_are_judged_on_the_session_state(helpdesk: tuple[int, dict, bytes]) -> None:
    _, summary, _ = helpdesk
    by = {p["name"]: p for p in summary["personas"]}
    assert by["order that is found"]["success"] == 1.0
    assert by["order that is found"]["excess_p50"] == 0
    assert by["order that is not found"]["outcomes"] == {"max_turns": 8}
    assert by["balance"]["failures"] == {"stuck": 8}
    greeter = by["polite greeter"]
    assert greeter["flaky"] and 0 < greeter["success"] < 1
    assert greeter["failures"] == {"entered_never": greeter["runs"] - greeter["successes"]}
    assert summary["suite"]["model_calls"] == 0


def test_the_same_inputs_give_the_same_bytes(
    helpdesk: tuple[int, dict, bytes], tmp_path: Path
) -> None:
    assert _simulate(tmp_path)[2] == helpdesk[2]


def test_a_stopped_simulation_resumes_to_the_same_bytes(
    helpdesk: tuple[int, dict, bytes], tmp_path: Path
) -> None:
    _simulate(tmp_path)
    results = tmp_path / "helpdesk" / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:5]) + lines[5][:40])  # killed while writing line 6
    _, summary, again = _simulate(tmp_path)
    assert summary["resumed"] == 5
    assert again == helpdesk[2]


def test_a_new_persona_changes_no_other_run(
    helpdesk: tuple[int, dict, bytes], tmp_path: Path
) -> None:
    text = SIM.read_text().replace("personas:\n", "personas:\n  - name: newcomer\n", 1)
    sim = tmp_path / "helpdesk.sim.yaml"
    sim.write_text(text.replace("graph: helpdesk.yaml", f"graph: {SIM.parent / 'helpdesk.yaml'}"))
    _, _, more = _simulate(tmp_path / "out", sim)
    others = [line for line in more.splitlines() if b'"persona":"newcomer"' not in line]
    assert others == helpdesk[2].splitlines()


def test_a_run_seed_depends_on_the_master_seed_the_persona_and_the_index() -> None:
    seeds = {run_seed(m, p, i) for m in (0, 1) for p in ("a", "b") for i in (0, 1)}
    assert len(seeds) == 8 and all(0 <= s < 2**31 for s in seeds)
    assert run_seed(0, "a", 0) == run_seed(0, "a", 0)


def test_a_bad_threshold_or_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    bad = SimRequest((SIM,), Options(out=tmp_path), fail_under="success=2")
    assert simulate_paths(bad, io.StringIO(), err) == 2
    assert "between 0 and 1" in err.getvalue()
    missing = replace(bad, paths=(tmp_path / "nope.sim.yaml",), fail_under=None)
    assert simulate_paths(missing, io.StringIO(), err) == 2
