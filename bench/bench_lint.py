"""How fast is `cgraph lint`? Everything measured side by side in one run.

    python bench/bench_lint.py [--runs 5] [--states 10000]

1. Cold start on one example graph: `cgraph lint graphs/medical_checkin.yaml` against
   `python -c "import yaml, jsonschema"` (aim: within 2x) and against check-jsonschema
   validating the same file with the published schema (when it is installed); then the
   same ratio in CPU instructions under valgrind's callgrind (when valgrind is installed).
2. A generated 10,000-state graph (~5.6 MB): the whole `cgraph lint` command against
   bare `yaml.compose(text, Loader=yaml.CSafeLoader)` on the same file (aim: <= 1.5x),
   and check-jsonschema on it.
3. One state with 50,000 exits (each to its own state): `cgraph lint` against
   `yaml.compose` of the same file, so a check quadratic in one state's exits shows.

cgraph's bytecode is compiled first, as an install does. Runs are interleaved and the
median is reported, so a busy machine slows every contender alike. Wall-clock times;
nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.generated_graph import generate_wide, write  # noqa: E402

BIN = Path(sys.executable).parent
CGRAPH = str(BIN / "cgraph")
SCHEMA = str(ROOT / "schemas" / "context-graph.schema.json")
EXAMPLE = str(ROOT / "graphs" / "medical_checkin.yaml")
COMPOSE = (
    "import sys, time, gc, yaml\n"
    "text = open(sys.argv[1], encoding='utf-8').read()\n"
    "if sys.argv[2] == 'nogc': gc.disable()\n"
    "start = time.perf_counter()\n"
    "yaml.compose(text, Loader=yaml.CSafeLoader)\n"
    "print(time.perf_counter() - start)\n"
)


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def reported(command: list[str]) -> float:
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def interleave(contenders: dict[str, Callable[[], float]], runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, measure in contenders.items():
            times[name].append(measure())
    return {name: statistics.median(found) for name, found in times.items()}


def check_jsonschema() -> str | None:
    found = BIN / "check-jsonschema"
    return str(found) if found.exists() else shutil.which("check-jsonschema")


def compile_bytecode() -> None:
    """Write cgraph's .pyc files, as `pip install` does, so no run pays for compiling.

    Without this, a machine with PYTHONDONTWRITEBYTECODE set recompiles every cgraph
    module on every run (about 14% of the cold start) while the contenders, installed
    packages, load their bytecode.
    """
    package = str(ROOT / "cgraph")
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True)


def cold_start(runs: int) -> None:
    compile_bytecode()
    contenders: dict[str, Callable[[], float]] = {
        "cgraph lint": lambda: wall([CGRAPH, "lint", EXAMPLE]),
        'python -c "import yaml, jsonschema"': lambda: wall(
            [sys.executable, "-c", "import yaml, jsonschema"]
        ),
        "cgraph --help": lambda: wall([CGRAPH, "--help"]),
    }
    cjs = check_jsonschema()
    if cjs:
        contenders["check-jsonschema"] = lambda: wall([cjs, "--schemafile", SCHEMA, EXAMPLE])
    medians = interleave(contenders, runs)
    base = medians['python -c "import yaml, jsonschema"']
    print(f"1. cold start on {Path(EXAMPLE).name} (median of {runs} runs)")
    for name, seconds in medians.items():
        print(f"   {name:<38} {seconds * 1000:8.0f} ms   {seconds / base:5.2f}x the import")
    print(
        f"   => cgraph lint / import yaml+jsonschema = {medians['cgraph lint'] / base:.2f} "
        "(aim <= 2)"
    )
    if cjs:
        print(
            f"   => cgraph lint / check-jsonschema     = "
            f"{medians['cgraph lint'] / medians['check-jsonschema']:.2f} (aim < 1)"
        )
    else:
        print("   (check-jsonschema is not installed: `pip install check-jsonschema` to compare)")
    instructions()


def instructions() -> None:
    """The same cold-start ratio in CPU instructions, which a busy machine cannot skew."""
    if not shutil.which("valgrind"):
        print("   (valgrind is not installed: no instruction counts)")
        return
    lint = counted([CGRAPH, "lint", EXAMPLE])
    base = counted([sys.executable, "-c", "import yaml, jsonschema"])
    print(
        f"   => in instructions (callgrind): {lint / 1e6:,.0f} M / {base / 1e6:,.0f} M = "
        f"{lint / base:.2f} (aim <= 2)"
    )


def counted(command: list[str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-300:]}")
    return int(found.group(1))


def large_graph(states: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(states, Path(folder))
        size = path.stat().st_size / 1e6
        file = str(path)
        contenders: dict[str, Callable[[], float]] = {
            "cgraph lint (whole command)": lambda: wall([CGRAPH, "lint", file]),
            "yaml.compose, CSafeLoader": lambda: reported(
                [sys.executable, "-c", COMPOSE, file, "gc"]
            ),
            "yaml.compose, CSafeLoader, gc off": lambda: reported(
                [sys.executable, "-c", COMPOSE, file, "nogc"]
            ),
        }
        cjs = check_jsonschema()
        if cjs:
            contenders["check-jsonschema"] = lambda: wall([cjs, "--schemafile", SCHEMA, file])
        medians = interleave(contenders, runs)
    base = medians["yaml.compose, CSafeLoader"]
    print(f"\n2. generated graph: {states:,} states, {size:.1f} MB (median of {runs} runs)")
    for name, seconds in medians.items():
        print(f"   {name:<38} {seconds:8.2f} s    {seconds / base:5.2f}x compose")
    lint = medians["cgraph lint (whole command)"]
    print(f"   => cgraph lint / yaml.compose = {lint / base:.2f} (aim <= 1.5)")
    print(
        f"   => cgraph lint / yaml.compose with gc off = "
        f"{lint / medians['yaml.compose, CSafeLoader, gc off']:.2f} "
        "(cgraph turns the cyclic GC off while it reads; see the README)"
    )
    if cjs:
        print(f"   => check-jsonschema / cgraph lint = {medians['check-jsonschema'] / lint:.1f}x")
    else:
        print("   (check-jsonschema is not installed: its column is skipped)")


def wide_state(exits: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "wide.yaml")
        path.write_text(generate_wide(exits), encoding="utf-8")
        file = str(path)
        contenders: dict[str, Callable[[], float]] = {
            "cgraph lint (whole command)": lambda: wall([CGRAPH, "lint", file]),
            "yaml.compose, CSafeLoader": lambda: reported(
                [sys.executable, "-c", COMPOSE, file, "gc"]
            ),
        }
        medians = interleave(contenders, runs)
    base = medians["yaml.compose, CSafeLoader"]
    print(f"\n3. one state with {exits:,} exits (median of {runs} runs)")
    for name, seconds in medians.items():
        print(f"   {name:<38} {seconds:8.2f} s    {seconds / base:5.2f}x compose")
    print(f"   => cgraph lint / yaml.compose = {medians['cgraph lint (whole command)'] / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large-runs", type=int, default=3)
    parser.add_argument("--states", type=int, default=10_000)
    parser.add_argument("--exits", type=int, default=50_000)
    args = parser.parse_args()
    cold_start(args.runs)
    large_graph(args.states, args.large_runs)
    wide_state(args.exits, args.large_runs)


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("lint"):
        main()
