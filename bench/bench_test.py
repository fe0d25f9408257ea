"""`cgraph test` on a file of 20 cases in the offline semantic mode, as CI runs it.

    python bench/bench_test.py [--runs 3]

Writes a test file of 20 cases (64 turns) against graphs/medical_checkin.yaml: the check-in's
own cases repeated, each a fresh session. Reports the whole command's wall time (a new
process: start-up and loading the embedding model included), and, from the same run's
per-case times, the time of the cases themselves and the mean per case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CGRAPH = Path(sys.executable).parent / "cgraph"
SOURCE = ROOT / "graphs" / "tests" / "medical_checkin.test.yaml"
CASES = 20


def twenty_cases(folder: Path) -> Path:
    """The check-in's cases (first phrasing only), repeated up to 20."""
    data = yaml.safe_load(SOURCE.read_text())
    cases = []
    while len(cases) < CASES:
        for case in data["cases"]:
            turns = [
                {**t, "user": t["user"] if isinstance(t["user"], str) else t["user"][0]}
                for t in case["turns"]
            ]
            cases.append({**case, "name": f"{case['name']} #{len(cases) + 1}", "turns": turns})
    data["cases"] = cases[:CASES]
    data["graph"] = str(ROOT / "graphs" / "medical_checkin.yaml")
    path = folder / "twenty.test.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def one_run(path: Path) -> tuple[float, float, int]:
    began = time.perf_counter()
    done = subprocess.run(
        [str(CGRAPH), "test", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    wall = time.perf_counter() - began
    report = json.loads(done.stdout)
    if done.returncode != 0:
        raise SystemExit(f"bench: cases failed:\n{done.stdout[-3000:]}{done.stderr}")
    cases = sum(r["seconds"] for r in report["runs"])
    turns = sum(len(r["turns"]) for r in report["runs"])
    return wall, cases, turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        path = twenty_cases(Path(tmp))
        results = [one_run(path) for _ in range(runs)]
    walls = [w for w, _, _ in results]
    cases = [c for _, c, _ in results]
    turns = results[0][2]
    print(f"cgraph test: {CASES} cases, {turns} turns, semantic model, {runs} runs (median)")
    print(f"  whole command     {statistics.median(walls):6.2f} s")
    print(f"  the cases alone   {statistics.median(cases):6.2f} s")
    print(f"  per case          {statistics.median(cases) / CASES * 1000:6.1f} ms")
    print(f"  start-up + model  {statistics.median(walls) - statistics.median(cases):6.2f} s")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("test"):
        main()
