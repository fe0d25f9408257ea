"""One `cgraph simulate` invocation as a library call: run each sim file, summarise, report,
hold the thresholds, and map the outcome to an exit code (0 held, 1 one failed, 2 bad
input)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cgraph.diagnostics import shown_path
from cgraph.errors import CgraphError, GraphError
from cgraph.simulate import gates
from cgraph.simulate.metrics import summarise
from cgraph.simulate.options import Options
from cgraph.simulate.reporters import REPORTERS
from cgraph.simulate.suite import RESULTS, SimResult, run_sim
from cgraph.spec.load import load_graph
from cgraph.spec.simfile import SUFFIXES

HELD, FAILED, USAGE = 0, 1, 2
SUMMARY = "summary.json"


@dataclass(frozen=True, slots=True)
class SimRequest:
    """What `cgraph simulate` was asked, parsed from its options."""

    paths: tuple[Path, ...]
    options: Options = field(default_factory=Options)
    output: str = "text"
    fail_under: str | None = None
    baseline: Path | None = None
    minimise: bool = False
    gate_on_judge: bool = False


def find_files(paths: tuple[Path, ...]) -> Iterator[Path]:
    """Sim files named, and `*.sim.yaml` files under folders (recursively, sorted)."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.name.endswith(SUFFIXES))
        else:
            yield path


def simulate_paths(request: SimRequest, out: IO[str], err: IO[str]) -> int:
    """Run every sim file of `request`; the exit code of `cgraph simulate`."""
    try:
        thresholds = gates.parse(request.fail_under)
        baseline = _baseline(request.baseline)
    except CgraphError as problem:
        err.write(f"error: {problem.message}\n")
        return USAGE
    files = list(find_files(request.paths))
    missing = [p for p in files if not p.is_file()]
    for path in missing:
        err.write(f"error: {path}: no such file\n")
    if missing or not files:
        if not files:
            err.write(f"error: no *.sim.yaml files under {', '.join(map(str, request.paths))}\n")
        return USAGE
    summaries = []
    for path in files:
        try:
            summaries.append(_one(path, request, thresholds, err))
        except GraphError as problem:
            for diag in problem.diagnostics:
                err.write(diag.render() + "\n")
            err.write(f"error: {problem.message}\n" if not problem.diagnostics else "")
            return USAGE
        except CgraphError as problem:
            err.write(f"error: {path}: {problem.message}\n")
            return USAGE
    breaches = [b for s in summaries for b in gates.breaches(s, thresholds)]
    stopped = [s for s in summaries if s.get("stopped")]
    for summary in stopped:
        err.write(f"{summary['file']}: stopped: {summary['stopped']}; the runs left were not run\n")
    out.write(REPORTERS.get(request.output, REPORTERS["text"])(summaries, breaches))
    if baseline is not None:
        from cgraph.simulate.baseline import compare

        out.write(compare(baseline, summaries))
    return FAILED if breaches or stopped else HELD


def _one(
    path: Path, request: SimRequest, thresholds: tuple[tuple[str, float], ...], err: IO[str]
) -> dict[str, Any]:
    began = time.perf_counter()
    result = run_sim(path, request.options)
    ks = {1, 3, *gates.ks(thresholds)}
    given = request.options
    graph = load_graph(result.sim.graph_path, trust=given.trust, limits=given.limits)
    summary = summarise(result.sim, graph, result.records, ks, request.gate_on_judge)
    summary |= {
        "file": str(shown_path(path)),
        "user": result.sim.user,
        "model": result.sim.model,
        "seed": result.sim.seed,
        "resumed": result.resumed,
        "stopped": result.stopped,
        "seconds": round(time.perf_counter() - began, 3),
        "results": str(shown_path(result.folder / RESULTS)),
        "graph_file": str(shown_path(result.sim.graph_path)),
        "store": str(request.options.store) if request.options.store else None,
    }
    if request.minimise:
        from cgraph.simulate.minimise import minimise_failures

        summary["minimised"] = minimise_failures(result, request.options, err)
    (result.folder / SUMMARY).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    if request.output == "html":
        from cgraph.simulate.html import write_report

        report = write_report(result, summary, graph)
        err.write(f"report: {shown_path(report)}\n")
    return summary


def _baseline(path: Path | None) -> list[dict[str, Any]] | None:
    if path is None:
        return None
    from cgraph.simulate.baseline import read

    return read(path)


__all__ = ["SimRequest", "SimResult", "simulate_paths"]
