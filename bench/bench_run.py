"""`cgraph run` as a user meets it: time and CPU to the first reply, time per turn, memory.

    python bench/bench_run.py [--runs 3] [--cache DIR]

Spawns the real command under a pseudo-terminal (pexpect) on graphs/medical_checkin.yaml
in the offline semantic mode, with a fresh store each run (a new user: memory is on, and
the check-in stores every turn). Time to first prompt is from spawn to the prompt; the
first reply is from spawn to the prompt after the first line, typed as soon as the prompt
shows (so it includes waiting for the embedding model, which a person typing would hide);
a turn is from sending a line to the next prompt. A one-message `--jsonl` process (the
shape of a CI run) is timed from spawn to exit, and the same lines piped to one `--jsonl`
process give its turns, from writing a line to reading the reply.

On a machine shared with other jobs the wall times wait for cores, so the bench also
reports what load does not inflate: the process's CPU time (user + system, all threads;
from /proc at the first reply, from wait4 at exit) and its peak RSS (VmHWM / ru_maxrss).
The embedding model is prepared once per machine (cgraph.backends.onnx_embed); a first
`--jsonl` run prepares it in `--cache` (a fresh folder by default), and a one-message run
with a fresh cache folder each time is reported apart, as a machine's first run (in the
cgraph process itself: the preparation starts no other process).
The vectors of the graph's texts are kept in the same cache by a run (cgraph.backends.
vector_cache), so the runs measured are not a graph's first on the machine; a one-message
run with those vectors deleted first is reported apart, as the graph's first run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
CGRAPH = Path(sys.executable).parent / "cgraph"
GRAPH = ROOT / "graphs" / "medical_checkin.yaml"
PROMPT = "you › "
LINES = [
    "Hello Ava, good morning to you.",
    "Yes, I'm ready to begin.",
    "I took all my medications this morning.",
    "No, I didn't need the spray.",
    "No chest pain at all.",
    "My breathing is normal.",
    "Great, thank you.",
    "No, that's all.",
]
TICKS = os.sysconf("SC_CLK_TCK")
PAUSE = 1.0
"""Seconds between a reply and the next line after the first: a person reads the reply
(`cgraph run` embeds the rest of the graph's texts then; the whole run's CPU counts it)."""


@dataclass
class Figures:
    """Every run's measurements, by name."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def median(self, name: str) -> float:
        return statistics.median(self.values[name])


def cpu_seconds(pid: int) -> float:
    """User + system time of a running process so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_message_jsonl(store: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall time, CPU time (s) and peak RSS (MB) of `echo LINE | cgraph run … --jsonl`."""
    command = [str(CGRAPH), "run", str(GRAPH), "--jsonl", "--store", str(store)]
    started = time.perf_counter()
    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert child.stdin is not None
    child.stdin.write(f"{LINES[0]}\n".encode())
    child.stdin.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, f"cgraph run --jsonl exited {child.returncode}"
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, cpu, usage.ru_maxrss / 1024


def jsonl_turns(store: Path, env: dict[str, str], figures: Figures) -> None:
    """The check-in's lines piped to one `cgraph run --jsonl` process, one at a time: each
    later turn from writing its line to reading its JSON line (wall, and CPU from /proc)."""
    command = [str(CGRAPH), "run", str(GRAPH), "--jsonl", "--store", str(store)]
    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    for number, line in enumerate(LINES):
        time.sleep(PAUSE if number else 0.0)
        sent, spent = time.perf_counter(), cpu_seconds(child.pid)
        child.stdin.write(f"{line}\n")
        child.stdin.flush()
        if not child.stdout.readline():
            break  # the check-in ended early: the later lines are no turns
        if number:
            figures.add("jsonl_turn", time.perf_counter() - sent)
            figures.add("jsonl_turn_cpu", cpu_seconds(child.pid) - spent)
    child.stdin.close()
    child.wait()


def one_run(store: Path, env: dict[str, str], figures: Figures) -> None:
    """One interactive check-in: the first prompt, the first reply, the later turns."""
    started = time.perf_counter()
    child = pexpect.spawn(
        str(CGRAPH),
        ["run", str(GRAPH), "--store", str(store)],
        env={**env, "TERM": "xterm"},
        encoding="utf-8",
        timeout=180,
        dimensions=(50, 200),
    )
    child.delaybeforesend = None  # pexpect's default 50 ms would count in every turn
    child.expect_exact(PROMPT)
    figures.add("prompt", time.perf_counter() - started)
    for number, line in enumerate(LINES):
        time.sleep(PAUSE if number else 0.0)
        sent, spent = time.perf_counter(), cpu_seconds(child.pid)
        child.sendline(line)
        child.expect_exact(PROMPT)
        took = time.perf_counter() - sent
        if "reached END" in (child.before or "") and number < len(LINES) - 1:
            figures.add("ended_early", number + 1)  # the later lines are no real turns
        if number == 0:
            figures.add("first", figures.values["prompt"][-1] + took)
            figures.add("first_cpu", cpu_seconds(child.pid))
            figures.add("first_rss", peak_rss_mb(child.pid))
        else:
            figures.add("turn", took)
            figures.add("turn_cpu", cpu_seconds(child.pid) - spent)
    figures.add("rss", peak_rss_mb(child.pid))
    figures.add("run_cpu", cpu_seconds(child.pid))
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()


def measure(runs: int, cache: Path) -> tuple[Figures, tuple[float, float, float]]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CGRAPH_CACHE": str(cache)}
    with tempfile.TemporaryDirectory() as folder:
        preparing = one_message_jsonl(Path(folder), env)  # prepares the model if not yet
    figures = Figures()
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            fresh = {**env, "CGRAPH_CACHE": str(Path(folder) / "cache")}
            wall, cpu, rss = one_message_jsonl(Path(folder) / "store", fresh)
        figures.add("machine", wall)
        figures.add("machine_cpu", cpu)
        figures.add("machine_rss", rss)
    with tempfile.TemporaryDirectory() as folder:
        jsonl_turns(Path(folder), env, Figures())  # keeps the vectors of all the texts
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            one_run(Path(folder), env, figures)
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu, rss = one_message_jsonl(Path(folder), env)
        figures.add("jsonl", wall)
        figures.add("jsonl_cpu", cpu)
        figures.add("jsonl_rss", rss)
        with tempfile.TemporaryDirectory() as folder:
            jsonl_turns(Path(folder), env, figures)
    for _ in range(runs):
        shutil.rmtree(cache / "vectors", ignore_errors=True)
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu, _ = one_message_jsonl(Path(folder), env)
        figures.add("uncached", wall)
        figures.add("uncached_cpu", cpu)
    return figures, preparing


def percentile(values: list[float], rank: int) -> float:
    """The nearest-rank percentile (50: the median's upper neighbour for an even count)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, rank * len(ordered) // 100)]


def report(figures: Figures, preparing: tuple[float, float, float], runs: int) -> None:
    ms = 1000
    load = os.getloadavg()[0]
    first = figures.median("first") * ms
    print(f"cgraph run, semantic mode, {runs} runs × {len(LINES)} turns (load {load:.1f})")
    print(f"  time to first prompt      median {figures.median('prompt') * ms:7.0f} ms")
    print(
        f"  launch to first reply     median {first:7.0f} ms (goal ≤ 1500 ms), "
        f"CPU {figures.median('first_cpu') * ms:.0f} ms, "
        f"peak RSS {max(figures.values['first_rss']):.0f} MB"
    )
    print(f"  later turns follow a {PAUSE:.1f} s pause (reading the reply)")
    for where, key in (("terminal", "turn"), ("--jsonl", "jsonl_turn")):
        wall, cpu = figures.values[key], figures.values[f"{key}_cpu"]
        print(
            f"  later turns, {where:9} wall p50 {percentile(wall, 50) * ms:5.0f} ms, "
            f"p95 {percentile(wall, 95) * ms:.0f} ms (goal p50 ≤ 30 ms); CPU p50 "
            f"{percentile(cpu, 50) * ms:.0f} ms, p95 {percentile(cpu, 95) * ms:.0f} ms "
            f"(in {1000 // TICKS} ms ticks)"
        )
    print(f"  CPU, whole 8-turn run     median {figures.median('run_cpu') * ms:7.0f} ms")
    print(f"  peak RSS, whole run       max {max(figures.values['rss']):7.0f} MB (goal ≤ 250 MB)")
    print(
        f"  one-message --jsonl run   median {figures.median('jsonl') * ms:7.0f} ms "
        f"(goal ≤ 2000 ms), CPU {figures.median('jsonl_cpu') * ms:.0f} ms, "
        f"peak RSS {max(figures.values['jsonl_rss']):.0f} MB"
    )
    uncached, uncached_cpu = figures.median("uncached") * ms, figures.median("uncached_cpu") * ms
    print(
        f"  the same, the graph's first run (its texts' vectors not cached yet) median "
        f"{uncached:.0f} ms, CPU {uncached_cpu:.0f} ms"
    )
    if "ended_early" in figures.values:
        turn = min(figures.values["ended_early"])
        print(f"  WARNING: the check-in reached END at turn {turn:.0f}: the chooser misread a line")
    print(
        f"  a machine's first run (prepares the model; one message) median "
        f"{figures.median('machine') * ms:.0f} ms, CPU {figures.median('machine_cpu') * ms:.0f} "
        f"ms, peak RSS {max(figures.values['machine_rss']):.0f} MB (goal ≤ 250 MB)"
    )
    wall, cpu, rss = preparing
    print(
        f"  the run before (prepares the model in --cache unless it is there): "
        f"{wall * ms:.0f} ms, CPU {cpu * ms:.0f} ms, peak RSS {rss:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, help="the model cache (default: a fresh folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as fresh:
        figures, preparing = measure(args.runs, args.cache or Path(fresh))
    report(figures, preparing, args.runs)


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("run"):
        main()
