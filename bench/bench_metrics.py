"""What `/metrics` costs a served turn: the serve bench's load (bench/bench_serve.py: its
flow, its scripted model, its client) on two `cgraph serve` processes of one SQLite store
each, one with metrics (the default) and one with `--no-metrics`, loaded in turn, several
rounds in one run; the turn rate of each (median of the rounds), their ratio, and the
server's CPU per turn. Scraped once a round, as Prometheus would.

    python bench/bench_metrics.py                  # 20 sessions x 20 turns, 5 rounds
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
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
    on, off = (statistics.median(rates[n]) for n in ("metrics on", "metrics off"))
    print(f"{args.sessions} sessions x {args.turns} turns, {args.rounds} rounds, flow {FLOW.name}")
    print("| server | turns/s (median) | server CPU ms/turn |")
    print("|---|---|---|")
    for name in servers:
        rate, spent = statistics.median(rates[name]), statistics.median(cpu[name])
        print(f"| {name} | {rate:,.0f} | {spent:.2f} |")
    print(f"\nmetrics on / off: {on / off:.3f} of the turn rate ({(1 - on / off) * 100:+.1f} %)")
    rounds = ", ".join(
        f"{a / b:.3f}" for a, b in zip(rates["metrics on"], rates["metrics off"], strict=True)
    )
    print(f"each round's ratio: {rounds}")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("metrics"):
        main()
