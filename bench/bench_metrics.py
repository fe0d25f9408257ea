"""What `/metrics` costs a served turn: the serve bench's load (bench/bench_serve.py: its
flow, its scripted model, its client) on two `cgraph serve` processes of one SQLite store
each, one with metrics (the default) and one with `--no-metrics`, loaded in turn, several
rounds in one run; the turn rate of each (median of the rounds), their ratio, and the
server's CPU per turn. Scraped once a round, as Prometheus would.

    python bench/bench_metrics.py                  # 20 sessions x 10 turns, 9 rounds
    python bench/bench_metrics.py --rounds 3 --turns 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_serve import FLOW, _free_port, _load, _wait_ready, cpu_seconds, script


def started(folder: Path, turns: int, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    answers = folder / "script.json"
    answers.write_text(json.dumps(script(turns)))
    port = _free_port()
    command = [sys.executable, "-m", "cgraph", "serve", str(FLOW), "--store", str(folder)]
    command += ["--memory", "off", "--model", f"scripted:{answers}", "--port", str(port)]
    command += ["--turns-per-minute", "1000000", "--sessions-per-user", "1000000", *extra]
    log = (folder / "serve.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    url = f"http://127.0.0.1:{port}"
    _wait_ready(url)
    return process, url


def counting_cost(rounds: int = 20_000) -> float:
    """Microseconds of CPU the counting of one turn of the flow takes, in process: what
    `cgraph.serve.watch` asks of `Metrics` for it (a request, a lock wait, the turn in
    flight, 3 model calls, the turn)."""
    from cgraph.observe import ModelCall
    from cgraph.serve.metrics import Metrics
    from cgraph.session import Turn

    metrics = Metrics()
    turn = Turn(session="s", number=1, user="u", reply="r", path=("a",), transitions=(), state="a")
    call = ModelCall(model="scripted", kind="action", state="a", started=0.0, seconds=0.001)
    started = time.process_time()
    for _ in range(rounds):
        metrics.in_flight.inc()
        metrics.waited(0.0001, busy=False)
        for _ in range(3):
            metrics.model_call(call)
        metrics.in_flight.dec()
        metrics.turn("bench_flow", turn, 0.01)
        metrics.request("POST", "/v1/sessions/{id}/messages", 200, 0.01)
    return (time.process_time() - started) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    servers = {}
    for name, extra in (("metrics on", ()), ("metrics off", ("--no-metrics",))):
        folder = root / name.replace(" ", "-")
        folder.mkdir()
        servers[name] = started(folder, args.turns, *extra)
    rates: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    try:
        for _, url in servers.values():  # warm: the first load of a process is not counted
            asyncio.run(_load([url], args.sessions, 2))
        for number in range(args.rounds):
            order = list(servers.items())[:: 1 if number % 2 else -1]
            for name, (process, url) in order:
                before = cpu_seconds([process.pid])
                load = asyncio.run(_load([url], args.sessions, args.turns))
                turns = len(load.latencies)
                cpu[name].append((cpu_seconds([process.pid]) - before) / turns * 1000)
                rates[name].append(turns / load.seconds)
                if name == "metrics on":
                    assert httpx.get(f"{url}/metrics").status_code == 200
    finally:
        for process, _ in servers.values():
            process.send_signal(signal.SIGKILL)
            process.wait()
    print(f"{args.sessions} sessions x {args.turns} turns, {args.rounds} rounds, flow {FLOW.name}")
    print("| server | turns/s (median) | server CPU ms/turn (median) |")
    print("|---|---|---|")
    for name in servers:
        rate, spent = statistics.median(rates[name]), statistics.median(cpu[name])
        print(f"| {name} | {rate:,.0f} | {spent:.2f} |")
    # Each round's two loads ran one after the other: their ratio is what is compared, the
    # median of them what is reported (the machine's other load moves between rounds).
    by_rate = [a / b for a, b in zip(rates["metrics on"], rates["metrics off"], strict=True)]
    by_cpu = [a / b for a, b in zip(cpu["metrics on"], cpu["metrics off"], strict=True)]
    print(
        f"\nmetrics on / off, median of the rounds: turn rate {statistics.median(by_rate):.3f}, "
        f"server CPU per turn {statistics.median(by_cpu):.3f}"
    )
    print("rounds, turn rate:", ", ".join(f"{r:.3f}" for r in by_rate))
    print("rounds, CPU per turn:", ", ".join(f"{r:.3f}" for r in by_cpu))
    cost = counting_cost()
    share = cost / 1000 / statistics.median(cpu["metrics off"]) * 100
    print(
        f"in process, the counting of one turn: {cost:.0f} µs of CPU, {share:.1f} % of a "
        "served turn's CPU with metrics off"
    )


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("metrics"):
        main()
