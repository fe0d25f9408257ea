"""A sim file's runs: every persona × run index, in this process or in `jobs` processes,
written to `results.jsonl` in (persona, run) order.

Each finished run is appended to `results.jsonl` at once, so a simulation stopped half
way resumes from it: the runs already there are kept (when the graph, the sim file, the
seed and the cgraph version are the ones they ran with, which `run.json` records) and only
the others run. At the end the file is rewritten in order, so the same inputs give the
same bytes however many processes ran them and however often it was resumed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from cgraph.errors import ConfigError, GraphError
from cgraph.simulate.options import EXPLORER, BudgetSpent, Options
from cgraph.simulate.run import Setup, simulate
from cgraph.simulate.setup import build
from cgraph.spec.simfile import Persona, SimFile, load_sim_file
from cgraph.version import __version__

RESULTS = "results.jsonl"
STAMP = "run.json"


@dataclass
class SimResult:
    """One sim file's runs (as `results.jsonl` lines) and where they were written."""

    sim: SimFile
    folder: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    resumed: int = 0
    """Runs kept from an earlier, stopped simulation."""
    stopped: str | None = None
    """Why runs were left unrun (`--budget` spent), if they were."""


def prepared(path: Path, options: Options) -> SimFile:
    """The sim file with the command line's overrides applied (`--explore`: one explorer)."""
    sim = load_sim_file(path, options.limits)
    changes: dict[str, Any] = {}
    if options.runs is not None:
        changes["runs"] = options.runs
        changes["personas"] = tuple(replace(p, runs=None) for p in sim.personas)
    if options.seed is not None:
        changes["seed"] = options.seed
    if options.user is not None:
        changes["user"] = options.user
    if options.model is not None:
        changes["model"] = options.model
    if options.user_model is not None:
        changes["user_model"] = options.user_model
    sim = replace(sim, **changes)
    if options.explore:
        sim = replace(sim, personas=(Persona(name=EXPLORER),), user="offline")
    if not sim.personas:
        raise GraphError(f"{path}: no personas; add one under `personas:`")
    return sim


def planned(sim: SimFile) -> list[tuple[int, int]]:
    """(persona index, run index) of every run, in report order."""
    return [
        (p, i) for p, persona in enumerate(sim.personas) for i in range(persona.runs or sim.runs)
    ]


def run_sim(
    path: Path, options: Options, on_run: Callable[[dict[str, Any]], None] | None = None
) -> SimResult:
    """Run (or resume) one sim file; `on_run` sees each run as it finishes."""
    sim = prepared(path, options)
    folder = folder_of(path, options)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = fingerprint(sim, options)
    kept = _kept(folder, stamp)
    todo = [key for key in planned(sim) if _key(sim, key) not in kept]
    result = SimResult(sim, folder, resumed=len(kept))
    (folder / STAMP).write_text(json.dumps({"fingerprint": stamp, "version": __version__}) + "\n")
    with (folder / RESULTS).open("a", encoding="utf-8") as out:
        try:
            for record in _runs(path, sim, options, todo):
                out.write(line(record))
                out.flush()
                kept[(record["persona"], record["run"])] = record
                if on_run:
                    on_run(record)
        except BudgetSpent as spent:
            result.stopped = spent.message
    ordered = [kept[_key(sim, key)] for key in planned(sim) if _key(sim, key) in kept]
    _write_atomically(folder / RESULTS, "".join(line(r) for r in ordered))
    result.records = ordered
    return result


def folder_of(path: Path, options: Options) -> Path:
    """Where a sim file's results go: `--out`/<its name without `.sim.yaml`>."""
    return options.out / path.name.removesuffix(".yaml").removesuffix(".sim")


def line(record: dict[str, Any]) -> str:
    """A run as one `results.jsonl` line (compact, keys in the record's order)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def fingerprint(sim: SimFile, options: Options) -> str:
    """What a run's result depends on: the graph's bytes (and its sub-graphs'), the sim
    file's, its overrides, and the cgraph version."""
    digest = hashlib.sha256(__version__.encode())
    for file in _graph_files(sim, options):
        digest.update(file.read_bytes())
    assert sim.source is not None
    digest.update(sim.source.read_bytes())
    given = (options.seed, options.user, options.model, options.user_model, options.explore)
    digest.update(repr(given).encode())
    return digest.hexdigest()[:16]


def _graph_files(sim: SimFile, options: Options) -> list[Path]:
    from cgraph.runtime.routes.graphs import Graphs
    from cgraph.spec.load import load_graph

    graph = load_graph(sim.graph_path, trust=options.trust, limits=options.limits)
    reachable = Graphs(graph).reachable()
    return sorted({g.source for g in reachable if g.source is not None})


def _key(sim: SimFile, key: tuple[int, int]) -> tuple[str, int]:
    return sim.personas[key[0]].name, key[1]


def _kept(folder: Path, stamp: str) -> dict[tuple[str, int], dict[str, Any]]:
    """The runs an earlier simulation of the same inputs left in `results.jsonl`."""
    results, marker = folder / RESULTS, folder / STAMP
    if not results.exists():
        return {}
    try:
        same = json.loads(marker.read_text()).get("fingerprint") == stamp
    except (OSError, ValueError, AttributeError):
        same = False
    if not same:
        results.unlink()
        return {}
    kept = {}
    for text in results.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(text)
            kept[(record["persona"], record["run"])] = record
        except (ValueError, KeyError, TypeError):
            continue  # the line a stopped process left half written
    return kept


def _runs(
    path: Path, sim: SimFile, options: Options, todo: list[tuple[int, int]]
) -> Iterator[dict[str, Any]]:
    if not todo:
        return
    # One process for a store: its SQLite file takes one writer at a time.
    if options.jobs <= 1 or options.explore or options.store or len(todo) == 1:
        worker = _Worker(path, options)
        try:
            for key in todo:
                yield worker.run(key)
        finally:
            worker.close()
        return
    # Processes, not threads: a turn is CPU-bound Python. Spawned, so that no lock another
    # thread held at fork time is inherited.
    context = get_context("spawn")
    with ProcessPoolExecutor(
        options.jobs, mp_context=context, initializer=_start, initargs=(path, options)
    ) as pool:
        chunk = max(1, len(todo) // (options.jobs * 4))
        yield from pool.map(_in_worker, todo, chunksize=chunk)


class _Worker:
    """What one process needs to run a sim file's runs: built once, used for many."""

    def __init__(self, path: Path, options: Options) -> None:
        self.sim = prepared(path, options)
        self.setup: Setup = build(self.sim, options, folder_of(path, options))

    def run(self, key: tuple[int, int]) -> dict[str, Any]:
        persona = self.sim.personas[key[0]]
        return simulate(self.setup, persona, key[1]).as_json()

    def close(self) -> None:
        self.setup.close()


_WORKER: _Worker | None = None


def _start(path: Path, options: Options) -> None:
    global _WORKER
    _WORKER = _Worker(path, options)


def _in_worker(key: tuple[int, int]) -> dict[str, Any]:
    if _WORKER is None:
        raise ConfigError("simulation worker not started")
    return _WORKER.run(key)


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
