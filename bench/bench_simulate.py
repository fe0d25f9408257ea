"""`cgraph simulate` offline: every example graph × 3 personas × 20 seeds, in one process.

    python bench/bench_simulate.py [--runs 20]

1. Speed. Each example graph's sim file (`graphs/sims/`) is run with the offline user,
   `--runs` seeds per persona: runs a second, turns a second, and the model calls made
   (0: nothing here talks to a model). The anchor, measured in the same run: the same
   user lines sent again through `Session.send` with no simulator (the planner, the
   user and the watching are what the ratio costs).
2. A big report. A generated graph of 200 states (`tests/support/generated_graph.py`)
   is explored (`--explore`, 5 runs) and its HTML report written; the report must draw
   every state, and headless Chromium must open it without a script error.
3. The wrong-move signal on graphs it was not tuned on. Into each example graph a global
   exit is injected that steals an exit a persona's example line took (it takes half of
   that exit's examples as its own); the graph is simulated again. Detection: the share
   of graphs whose confusion pairs name the thief in that state. Precision: of the wrong
   moves counted in that state, the share the thief took. (So far the offline chooser
   keeps the state's own exit on such ties, so the thief is seldom taken at all.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph.session import Session  # noqa: E402
from cgraph.simulate.metrics import summarise  # noqa: E402
from cgraph.simulate.options import Options  # noqa: E402
from cgraph.simulate.suite import run_sim  # noqa: E402
from cgraph.spec.load import load_graph  # noqa: E402
from tests.support.generated_graph import write  # noqa: E402

SIMS = ROOT / "graphs" / "sims"
THIEF = "stolen_here"


def speed(runs: int, out: Path) -> list[tuple[str, dict[str, Any]]]:
    rows, results = [], []
    total_runs = total_turns = calls = 0
    sim_seconds = anchor_seconds = 0.0
    for path in sorted(SIMS.glob("*.sim.yaml")):
        began = time.perf_counter()
        result = run_sim(path, Options(runs=runs, out=out))
        seconds = time.perf_counter() - began
        graph = load_graph(result.sim.graph_path)
        summary = summarise(result.sim, graph, result.records)
        turns = sum(r["turns"] for r in result.records)
        anchor = _anchor(graph, result.records)
        rows.append((graph.name, len(result.records), turns, seconds, anchor))
        total_runs += len(result.records)
        total_turns += turns
        calls += summary["suite"]["model_calls"]
        sim_seconds += seconds
        anchor_seconds += anchor
        results.append((graph.name, summary))
    print(f"{'graph':24} {'runs':>5} {'turns':>6} {'runs/s':>7} {'turns/s':>8} {'vs Session':>10}")
    for name, n, turns, seconds, anchor in rows:
        print(
            f"{name:24} {n:5d} {turns:6d} {n / seconds:7.1f} {turns / seconds:8.0f} "
            f"{seconds / anchor:9.2f}x"
        )
    print(
        f"{'all':24} {total_runs:5d} {total_turns:6d} {total_runs / sim_seconds:7.1f} "
        f"{total_turns / sim_seconds:8.0f} {sim_seconds / anchor_seconds:9.2f}x"
    )
    print(f"model calls: {calls}  (the setup of each graph, lint and model, included above)")
    return results


def _anchor(graph: Any, records: list[dict[str, Any]]) -> float:
    """The same runs' user lines sent through `Session.send` alone."""
    from cgraph.session import ToolRunner
    from cgraph.wiring.models import resolve_model

    model = resolve_model("semantic", graph.model, embedding_model=graph.embedding_source())
    tools = ToolRunner()
    began = time.perf_counter()
    try:
        for record in records:
            session = Session.start(graph, model=model, tools=tools)
            for turn in record["transcript"]:
                if session.completed:
                    break
                session.send(turn["user"])
    finally:
        tools.close()
    return time.perf_counter() - began


def big_report(out: Path) -> None:
    from cgraph.simulate.html import page

    folder = out / "big"
    folder.mkdir()
    graph_file = write(200, folder)
    sim = folder / "big.sim.yaml"
    sim.write_text(f"cgraph-sim: 1\ngraph: {graph_file.name}\nruns: 5\npersonas: [{{name: x}}]\n")
    began = time.perf_counter()
    result = run_sim(sim, Options(out=out, explore=True, runs=5))
    graph = load_graph(graph_file)
    summary = summarise(result.sim, graph, result.records)
    summary |= {"file": sim.name, "seconds": 0.0, "results": "results.jsonl"}
    html = page(result, summary)
    drawn = time.perf_counter() - began
    report = folder / "report.html"
    report.write_text(html, encoding="utf-8")
    missing = [s for s in graph.states if f"s&#45;{s}" not in html and f"s-{s}" not in html]
    errors = _open_in_chromium(report)
    print(
        f"200-state graph: {len(graph.states)} states, explored and reported in {drawn:.1f} s, "
        f"{len(html) / 1e6:.2f} MB of HTML, {len(missing)} states not drawn, "
        f"browser errors: {errors or 'none'}"
    )
    if missing or errors:
        raise SystemExit("bench: the 200-state report does not render")


def _open_in_chromium(report: Path) -> list[str]:
    chromium = shutil.which("chromium")
    if chromium is None:
        return ["no chromium on this machine"]
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        view = browser.new_page()
        view.on("pageerror", lambda e: errors.append(str(e)))
        view.goto(report.as_uri())
        view.wait_for_selector("#runs tbody tr")
        browser.close()
    return errors


def thieves(runs: int, out: Path) -> None:
    found = precise = 0
    graphs = 0
    lines = []
    for path in sorted(SIMS.glob("*.sim.yaml")):
        sim = yaml.safe_load(path.read_text())
        source = (path.parent / sim["graph"]).resolve()
        data = yaml.safe_load(source.read_text())
        victim = _victim(path, data, out)
        if victim is None:
            continue
        state, examples = victim
        data.pop("topology", None)  # the authored map would miss the new exit
        folder = out / f"thief-{source.stem}"
        shutil.copytree(source.parent, folder, ignore=shutil.ignore_patterns("sims", "tests"))
        data.setdefault("global_exits", []).append(
            {
                "description": "The user asks about something else entirely.",
                "next_state": THIEF,
                "examples": examples[: max(1, len(examples) // 2)],
            }
        )
        data["states"][THIEF] = {
            "type": "annotation",
            "objective": "Note the stolen turn.",
            "next_state": "END",
        }
        (folder / source.name).write_text(yaml.safe_dump(data, sort_keys=False))
        sim["graph"] = source.name
        sim_file = folder / path.name
        sim_file.write_text(yaml.safe_dump(sim, sort_keys=False))
        result = run_sim(sim_file, Options(runs=runs, out=out / "thief-results"))
        summary = summarise(result.sim, load_graph(folder / source.name), result.records)
        pairs = [p for p in summary["suite"]["confusion"] if p["state"] == state]
        stolen = sum(p["count"] for p in pairs if p["taken"] == f"ANY -> {THIEF}")
        wrong = sum(p["count"] for p in pairs)
        graphs += 1
        found += stolen > 0
        precise += stolen / wrong if wrong else 0
        lines.append(f"  {source.stem}: {state}: thief took {stolen} of {wrong} wrong moves")
    print(f"thief detected in {found} of {graphs} graphs; precision {precise / max(graphs, 1):.2f}")
    print("\n".join(lines))


def _victim(sim: Path, data: dict[str, Any], out: Path) -> tuple[str, list[str]] | None:
    """The root state and exit of the first example line the personas said and the
    chooser took as meant, with that exit's examples."""
    result = run_sim(sim, Options(runs=2, out=out / "victims"))
    for record in result.records:
        for turn in record["transcript"]:
            if turn["kind"] != "example" or turn["verdict"] != "right":
                continue
            state, _, exit_id = (turn["meant"] or "").partition(" -> ")
            spec = data["states"].get(state)
            if spec is None:
                continue
            for exit_ in spec.get("exit_conditions") or []:
                target = exit_.get("next_state")
                if target == exit_id and len(exit_.get("examples", [])) >= 2:
                    return state, list(exit_["examples"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        speed(args.runs, out / "speed")
        big_report(out)
        thieves(max(5, args.runs // 4), out)


if __name__ == "__main__":
    from record import recorded

    with recorded("simulate"):
        main()
