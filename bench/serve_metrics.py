"""What `/metrics` costs the serving bench (`bench_serve.py --metrics ROUNDS`): its load
(its flow, its scripted model, its client, on PostgreSQL) on two `cgraph serve`
processes, one with metrics (the default, scraped once a round as Prometheus would) and
one with `--no-metrics`, each on a database of its own. Each round loads both at once, so
the machine's other load weighs on both alike; a round's ratio (on / off) of the turn
rate and of the server CPU per turn is what is compared, and the median of the rounds
what is reported, with the machine's load before and after.
"""

from __future__ import annotations

import asyncio
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from bench_serve import Load, Serve, _load, cpu_seconds

from tests.postgres import Server as Postgres

GOAL = 0.05
"""The most metrics may cost the serving bench's turn rate (issue: operating a served graph)."""
SERVERS = {"metrics on": (), "metrics off": ("--no-metrics",)}


@dataclass
class Rounds:
    """One server's figures, a value a round."""

    rates: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    """Server CPU ms a turn."""
    p50: list[float] = field(default_factory=list)
    p95: list[float] = field(default_factory=list)

    def add(self, load: Load, spent: float) -> None:
        turns = len(load.latencies)
        cuts = statistics.quantiles(load.latencies, n=100)
        self.rates.append(turns / load.seconds)
        self.cpu.append(spent / turns * 1000)
        self.p50.append(cuts[49] * 1000)
        self.p95.append(cuts[94] * 1000)

    def row(self, name: str) -> str:
        median = statistics.median
        return (
            f"| {name} | {median(self.rates):,.0f} | {median(self.p50):.1f} | "
            f"{median(self.p95):.1f} | {median(self.cpu):.2f} |"
        )


async def _both(servers: dict[str, Serve], sessions: int, turns: int) -> dict[str, Load]:
    loads = await asyncio.gather(*(_load(s.urls, sessions, turns) for s in servers.values()))
    return dict(zip(servers, loads, strict=True))


def run_metrics(pg: Postgres, folder: Path, rounds: int, sessions: int, turns: int) -> None:
    servers: dict[str, Serve] = {}
    try:
        for name, extra in SERVERS.items():
            place = folder / name.replace(" ", "-")
            place.mkdir()
            servers[name] = Serve(pg.database(), place, turns, extra=extra)
        on = servers["metrics on"].urls[0]
        assert httpx.get(f"{servers['metrics off'].urls[0]}/metrics").status_code == 404
        asyncio.run(_both(servers, sessions, 2))  # warm: a process's first load is not counted
        figures = {name: Rounds() for name in servers}
        loads = [os.getloadavg()[0]]
        for _ in range(rounds):
            pids = {name: [p.pid for p in s.processes] for name, s in servers.items()}
            before = {name: cpu_seconds(p) for name, p in pids.items()}
            done = asyncio.run(_both(servers, sessions, turns))
            for name, load in done.items():
                figures[name].add(load, cpu_seconds(pids[name]) - before[name])
            assert httpx.get(f"{on}/metrics").status_code == 200  # scraped once a round
        loads.append(os.getloadavg()[0])
    finally:
        for serve in servers.values():
            serve.stop()
    _report(figures, rounds, sessions, turns, loads)


def _report(
    figures: dict[str, Rounds], rounds: int, sessions: int, turns: int, loads: list[float]
) -> None:
    cores = os.cpu_count()
    print(
        f"{sessions} sessions x {turns} turns on each server at once, {rounds} rounds, "
        f"PostgreSQL, 1 process each, {cores} cores; load {loads[0]:.1f} before, "
        f"{loads[1]:.1f} after"
    )
    print("| server | turns/s | p50 ms | p95 ms | server CPU ms/turn |")
    print("|---|---|---|---|---|")
    for name, found in figures.items():
        print(found.row(name))
    on, off = figures["metrics on"], figures["metrics off"]
    by_rate = [a / b for a, b in zip(on.rates, off.rates, strict=True)]
    by_cpu = [a / b for a, b in zip(on.cpu, off.cpu, strict=True)]
    rate, cpu = statistics.median(by_rate), statistics.median(by_cpu)
    verdict = "within" if rate >= 1 - GOAL else "over"
    print(
        f"\nmetrics on / off, median of the rounds: turn rate {rate:.3f}, server CPU per turn "
        f"{cpu:.3f} ({verdict} the goal: at most {GOAL:.0%} slower)"
    )
    low, _, high = statistics.quantiles(by_rate, n=4) if len(by_rate) > 1 else (rate,) * 3
    print(f"the rounds' middle half, turn rate: {low:.3f} to {high:.3f}")
    print("rounds, turn rate:", ", ".join(f"{r:.3f}" for r in by_rate))
    print("rounds, CPU per turn:", ", ".join(f"{r:.3f}" for r in by_cpu))
