"""A simulation of the seeded help desk, in this process: the report names each seeded
fault, and the same inputs give the same `results.jsonl` bytes, resumed or not."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cgraph.simulate.options import Options
from cgraph.simulate.run import run_seed
from cgraph.simulate.simulation import SimRequest, simulate_paths
from tests.conftest import FIXTURES

SIM = FIXTURES / "sim" / "helpdesk.sim.yaml"


def _simulate(
    out: Path, sim: Path = SIM, minimise: bool = False, **given: object
) -> tuple[int, dict, bytes]:
    options = Options(out=out, **given)  # type: ignore[arg-type]
    request = SimRequest((sim,), options, output="json", minimise=minimise)
    shown, err = io.StringIO(), io.StringIO()
    code = simulate_paths(request, shown, err)
    assert "Traceback" not in err.getvalue()
    folder = out / sim.name.removesuffix(".sim.yaml")
    summary = json.loads((folder / "summary.json").read_text())
    return code, summary, (folder / "results.jsonl").read_bytes()


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, bytes]:
    return _simulate(tmp_path_factory.mktemp("sim"), minimise=True)


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


def test_minimise_turns_the_greeting_thief_into_a_short_case_that_fails_until_fixed(
    helpdesk: tuple[int, dict, bytes], tmp_path: Path
) -> None:
    from cgraph.testing.runner import Options as TestOptions
    from cgraph.testing.runner import Runner, count

    cases = {c["failure"]: c for c in helpdesk[1]["minimised"]}
    assert set(cases) == {"entered_never", "stuck"}
    stolen = Path(cases["entered_never"]["test"])
    assert cases["entered_never"]["turns"] <= 2
    text = stolen.read_text()
    assert "persona `polite greeter`" in text and "seed " in text and "0.1.0" in text
    assert count(Runner(TestOptions()).run_paths([stolen]))[:2] == (0, 1)
    fixed = tmp_path / "helpdesk.yaml"
    graph = (SIM.parent / "helpdesk.yaml").read_text()
    greetings = '"Hello!", "Hi there!", "Hey, hello.", "Good morning!", '
    fixed.write_text(graph.replace(greetings, ""))  # the exit keeps only its real example
    case = tmp_path / "case.test.yaml"
    case.write_text(re.sub(r"(?m)^graph: .*$", "graph: helpdesk.yaml", text))
    assert count(Runner(TestOptions()).run_paths([case]))[:2] == (1, 0)


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


def test_the_html_report_draws_the_graph_and_keys_every_exit_taken_to_a_drawn_edge(
    tmp_path: Path,
) -> None:
    from html import unescape

    from cgraph.simulate.html import page
    from cgraph.simulate.metrics import summarise
    from cgraph.simulate.suite import run_sim
    from cgraph.spec.load import load_graph

    result = run_sim(SIM, Options(out=tmp_path, runs=2))
    summary = summarise(result.sim, load_graph(result.sim.graph_path), result.records)
    summary |= {"file": "helpdesk.sim.yaml", "seconds": 0.0, "results": "results.jsonl"}
    html = page(result, summary)
    data = json.loads(html.split('type="application/json">', 1)[1].split("</script>", 1)[0])
    drawn = unescape(html.split("<svg", 1)[1].split("</svg>", 1)[0])
    assert data["edges"] and all(f'id="{i}"' in drawn for i in data["edges"].values())
    assert 'id="s-balance"' in drawn
    assert "<script src" not in html and "<link" not in html  # nothing fetched


def test_with_a_store_each_run_is_a_session_the_studio_can_open(tmp_path: Path) -> None:
    from cgraph.session import Session
    from cgraph.simulate.suite import run_sim

    store = tmp_path / "store"
    result = run_sim(SIM, Options(out=tmp_path / "out", runs=1, store=store))
    for record in result.records:
        kept = Session.resume(record["session"], store=store, finish=False)
        users = [t.user for t in kept.turns() if t.user is not None]
        assert users == [t["user"] for t in record["transcript"]]
        kept.close()
    again = run_sim(SIM, Options(out=tmp_path / "again", runs=1, store=store))  # replaced
    assert [r["transcript"] for r in again.records] == [r["transcript"] for r in result.records]
