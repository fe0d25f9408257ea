"""What running tools in a worker process costs, against a thread of the session's process.

    python bench/bench_tools.py [--calls 300] [--rounds 5]

Both isolations run through the session's `ToolRunner`, in one run, round after round
alternately (so a busy machine slows both alike):

- first call: a new runner's first call, the worker's start-up and the import of the
  handler's module included (nothing warmed); then the first call 1 s after a worker was
  started in the background and told to import the handlers (`warm()`, as a session with
  tools does when it starts); for a thread, the first call imports the handler's module;
- later calls: p50 / p95 of `--calls` calls of a small handler (a short text in, a small
  object out), and of one returning ~100 KB of JSON;
- after a timeout: the CPU seconds the process and its workers spend in the 2 s after a
  call to an endless loop timed out (a thread cannot be stopped; a worker is killed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cgraph.errors import ToolError
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.spec.model import Tool

HANDLERS = """
def echo(text, idempotency_key=""):
    return {"text": text, "key": idempotency_key}

def big(text):
    return [{"index": n, "text": text * 8} for n in range(1000)]

def spin(text):
    while True:
        pass
"""
TICKS = os.sysconf("SC_CLK_TCK")


def tool(name: str, isolation: str, timeout: float = 10.0, module: str = "handlers") -> Tool:
    return Tool(name=name, handler=f"{module}:{name}", timeout=timeout, isolation=isolation)


def timed(call: Callable[[], Any]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def first_call(folder: Path, isolation: str, module: str, warmed: bool = False) -> float:
    """The first call of a new runner to a module not imported yet (in this process)."""
    (folder / f"{module}.py").write_text(HANDLERS)
    runner = ToolRunner()
    try:
        spec = tool("echo", isolation, module=module)
        if warmed:
            if isolation == "process":
                runner.warm([(spec, folder)])  # as a session with such tools does at its start
            time.sleep(1.0)  # the conversation's first turn, while the worker boots
        return timed(lambda: runner.call(spec, folder, {"text": "hi"}, "k"))
    finally:
        runner.close()


def later_calls(folder: Path, isolation: str, name: str, calls: int) -> list[float]:
    runner = ToolRunner()
    try:
        spec = tool(name, isolation)
        runner.call(spec, folder, {"text": "warm"}, "k0")
        return [
            timed(lambda n=n: runner.call(spec, folder, {"text": f"call {n}"}, f"k{n}"))
            for n in range(calls)
        ]
    finally:
        runner.close()


def cpu_after_timeout(folder: Path, isolation: str) -> float:
    runner = ToolRunner()
    try:
        with contextlib.suppress(ToolError):
            runner.call(tool("spin", isolation, timeout=0.5), folder, {"text": "x"}, "k")
        before = cpu_seconds(runner)
        time.sleep(2.0)
        return cpu_seconds(runner) - before
    finally:
        runner.close()


def cpu_seconds(runner: ToolRunner) -> float:
    mine = os.times()
    total = mine.user + mine.system
    for pid in runner.workers():
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        (folder / "handlers.py").write_text(HANDLERS)
        report(measure(folder, options.calls, options.rounds), options)


Figures = dict[str, dict[str, list[float]]]


def measure(folder: Path, calls: int, rounds: int) -> Figures:
    found: Figures = {"process": {}, "thread": {}}
    for number in range(rounds):
        for isolation, figures in found.items():
            module = f"first_{isolation}_{number}"
            figures.setdefault("first", []).append(first_call(folder, isolation, module))
            warmed = first_call(folder, isolation, module + "_warmed", warmed=True)
            figures.setdefault("first, warmed", []).append(warmed)
            figures.setdefault("small", []).extend(later_calls(folder, isolation, "echo", calls))
            figures.setdefault("100 KB", []).extend(later_calls(folder, isolation, "big", calls))
    # Last, and once: the thread version leaves its loop spinning for good.
    for isolation, figures in found.items():
        figures["cpu"] = [cpu_after_timeout(folder, isolation)]
    return found


def report(found: Figures, options: argparse.Namespace) -> None:
    print(f"tool calls: {options.rounds} rounds, {options.calls} later calls each, ms")
    print(f"{'':34}{'process':>12}{'thread':>12}{'ratio':>8}")
    rows: list[tuple[str, Callable[[dict[str, list[float]]], float]]] = [
        ("first call (median of rounds)", lambda f: statistics.median(f["first"])),
        ("first call, worker warmed", lambda f: statistics.median(f["first, warmed"])),
        ("later calls p50", lambda f: percentile(f["small"], 0.5)),
        ("later calls p95", lambda f: percentile(f["small"], 0.95)),
        ("later calls, 100 KB result, p50", lambda f: percentile(f["100 KB"], 0.5)),
        ("later calls, 100 KB result, p95", lambda f: percentile(f["100 KB"], 0.95)),
        ("CPU s in 2 s after a timeout", lambda f: statistics.median(f["cpu"])),
    ]
    for label, figure in rows:
        process, thread = figure(found["process"]), figure(found["thread"])
        ratio = process / thread if thread else float("inf")
        print(f"{label:34}{process:12.3f}{thread:12.3f}{ratio:8.1f}")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("tools"):
        main()
