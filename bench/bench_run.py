"""`cgraph run` as a user meets it: time to first prompt and reply, time per turn, memory.

    python bench/bench_run.py [--runs 3]

Spawns the real command under a pseudo-terminal (pexpect) on graphs/medical_checkin.yaml
in the offline semantic mode, with a fresh store each run. Time to first prompt is from
spawn to the prompt; the first reply is from spawn to the prompt after the first line,
typed as soon as the prompt shows (it includes waiting for the embedding model); a turn
is from sending a line to the next prompt; peak RSS is the process's VmHWM just before it
exits. A one-message `--jsonl` process (the shape of a CI run) is timed from spawn to exit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
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


def one_message_jsonl(store: Path) -> tuple[float, float, float]:
    """Wall time, CPU time (s) and peak RSS (MB) of `echo LINE | cgraph run … --jsonl`.

    CPU time (user + system) is what the process costs a machine to itself: on a busy
    machine the wall time waits for cores as well."""
    command = [str(CGRAPH), "run", str(ROOT / "graphs" / "medical_checkin.yaml"), "--jsonl"]
    started = time.perf_counter()
    child = subprocess.Popen(
        [*command, "--store", str(store)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(f"{LINES[0]}\n".encode())
    child.stdin.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, f"cgraph run --jsonl exited {child.returncode}"
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started, cpu, usage.ru_maxrss / 1024


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
    return first_prompt, first_prompt + times[0], times[1:], rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    prompts, firsts, turns, rss, jsonl, jsonl_cpu, jsonl_rss = [], [], [], [], [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            prompt, first, rest, peak = one_run(Path(folder))
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu, peak_jsonl = one_message_jsonl(Path(folder))
        prompts.append(prompt)
        firsts.append(first)
        turns.extend(rest)
        rss.append(peak)
        jsonl.append(wall)
        jsonl_cpu.append(cpu)
        jsonl_rss.append(peak_jsonl)
    ordered = sorted(turns)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    load = os.getloadavg()[0]
    print(f"cgraph run, semantic mode, {args.runs} runs × {len(LINES)} turns (load {load:.1f})")
    print(f"  time to first prompt      median {statistics.median(prompts) * 1000:7.0f} ms "
          f"(aim < 1000 ms)")  # fmt: skip
    print(f"  launch to first reply     median {statistics.median(firsts) * 1000:7.0f} ms "
          f"(goal ≤ 1500 ms)")  # fmt: skip
    print(f"  later turns               p50 {statistics.median(turns) * 1000:7.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms (goal p50 ≤ 30 ms)")  # fmt: skip
    print(f"  peak RSS                  max {max(rss):7.0f} MB (goal ≤ 250 MB)")
    print(f"  one-message --jsonl run   median {statistics.median(jsonl) * 1000:7.0f} ms "
          f"(goal ≤ 2000 ms), CPU {statistics.median(jsonl_cpu) * 1000:.0f} ms, "
          f"peak RSS {max(jsonl_rss):.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
