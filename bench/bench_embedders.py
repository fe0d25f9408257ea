"""Cold start and per-text cost of the candidate embedding models, each in a fresh process.

    python bench/bench_embedders.py [SPEC ...]

SPEC as in `bench/embedding_candidates.py` ("" is the default int8 ONNX MiniLM), or
`nli:FOLDER` for the NLI veto's cross-encoder (`bench/nli_veto.py`; one message and exit
description per call instead of one message). For each
one a new Python process imports the embedder, loads the model and embeds one message
("load + first embed", what a first reply waits for), then embeds 40 short messages it
has not seen, one at a time (p50 / p95 per message, as a turn embeds the user's message),
and reports its peak RSS. The candidates are measured one after another in one run, so
their ratios hold even on a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, statistics, sys, time
from pathlib import Path
started = time.perf_counter()
spec = sys.argv[1]
if spec.startswith("nli:"):  # the NLI veto's cross-encoder: one (message, exit) pair
    from bench.nli_veto import PairClassifier
    pairs = PairClassifier(Path(spec[4:]))
    embed = lambda text: pairs.contradiction(text, "The patient reports side effects.")
else:
    from bench.embedding_candidates import embedder
    model = embedder(spec)
    embed = lambda text: model.embed([text])
embed("Hi, my card was stolen this morning.")
loaded = time.perf_counter() - started
timings = []
for n in range(40):
    text = f"Message {n}: no side effects so far, I feel fine and slept {n} hours."
    began = time.perf_counter()
    embed(text)
    timings.append((time.perf_counter() - began) * 1000)
timings.sort()
print(json.dumps({
    "load": loaded,
    "p50": statistics.median(timings),
    "p95": timings[int(0.95 * len(timings))],
    "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def measure(spec: str) -> dict[str, float]:
    """One fresh process's figures for `spec`."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, spec],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**_env(), "PYTHONPATH": str(ROOT)},
    )
    if done.returncode != 0:
        raise SystemExit(f"{spec!r} failed:\n{done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _env() -> dict[str, str]:
    quiet = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return {**os.environ, **quiet}


def main() -> None:
    specs = sys.argv[1:] or [""]
    print(f"{'model':60s} {'load+1st':>9s} {'p50':>8s} {'p95':>8s} {'peak RSS':>9s}")
    for spec in specs:
        f = measure(spec)
        name = spec or "int8 ONNX MiniLM (default)"
        print(
            f"{name[-60:]:60s} {f['load']:8.2f}s {f['p50']:6.1f}ms {f['p95']:6.1f}ms "
            f"{f['rss']:7.0f}MB"
        )


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("embedders"):
        main()
