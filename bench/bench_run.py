"""`cgraph run` as a user meets it: time to first prompt, time per turn, peak memory.

    python bench/bench_run.py [--runs 3]

Spawns the real command under a pseudo-terminal (pexpect) on graphs/medical_checkin.yaml
in the offline semantic mode, with a fresh store each run. Time to first prompt is from
spawn to the prompt; a turn is from sending a line to the next prompt (the first turn
includes waiting for the embedding model, so it is reported apart); peak RSS is the
process's VmHWM just before it exits.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parent.parent
CGRAPH = Path(sys.executable).parent / "cgraph"
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


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_run(store: Path) -> tuple[float, float, list[float], float]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TERM": "xterm"}
    started = time.perf_counter()
    child = pexpect.spawn(
        str(CGRAPH), ["run", str(ROOT / "graphs" / "medical_checkin.yaml"), "--store", str(store)],
        env=env, encoding="utf-8", timeout=180, dimensions=(50, 200),
    )  # fmt: skip
    child.expect_exact(PROMPT)
    first_prompt = time.perf_counter() - started
    times = []
    for line in LINES:
        sent = time.perf_counter()
        child.sendline(line)
        child.expect_exact(PROMPT)
        times.append(time.perf_counter() - sent)
    rss = peak_rss_mb(child.pid)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    return first_prompt, times[0], times[1:], rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    prompts, firsts, turns, rss = [], [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            prompt, first, rest, peak = one_run(Path(folder))
        prompts.append(prompt)
        firsts.append(first)
        turns.extend(rest)
        rss.append(peak)
    ordered = sorted(turns)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    load = os.getloadavg()[0]
    print(f"cgraph run, semantic mode, {args.runs} runs × {len(LINES)} turns (load {load:.1f})")
    print(f"  time to first prompt      median {statistics.median(prompts) * 1000:7.0f} ms "
          f"(aim < 1000 ms)")  # fmt: skip
    print(f"  first turn (model load)   median {statistics.median(firsts) * 1000:7.0f} ms")
    print(f"  later turns               p50 {statistics.median(turns) * 1000:7.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms")  # fmt: skip
    print(f"  peak RSS                  max {max(rss):7.0f} MB")


if __name__ == "__main__":
    main()
