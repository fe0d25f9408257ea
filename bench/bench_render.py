"""The cost of the render budget: bounded rendering against plain sandboxed Jinja.

Each template of the example graphs' kind (a `say:` text, a `set:` value, a loop) is
rendered many times by `cgraph.spec.templating` (immutable sandbox, size checks on
every operation, a deadline per render) and by Jinja's own `SandboxedEnvironment` with
the same compiled-template cache, in one run, so the ratio holds on a busy machine.
Also rendered from a worker thread, where the deadline must work the same.

Run: `.venv/bin/python bench/bench_render.py`; with `--before REV` it also measures the
cgraph of git revision REV (in its own process, right before this tree's), so the two
ratios come from one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# `--before` runs this file again with an older cgraph's source first on the path.
sys.path.insert(0, os.environ.get("CGRAPH_BENCH_SOURCE", str(ROOT)))

from jinja2 import StrictUndefined, Template  # noqa: E402
from jinja2.nativetypes import NativeEnvironment  # noqa: E402
from jinja2.sandbox import SandboxedEnvironment  # noqa: E402

from cgraph.spec.templating import render_text, render_value  # noqa: E402

CONTEXT: dict[str, Any] = {
    "user_name": "Ada",
    "flags": ["fever", "cough"],
    "visits": 3,
    "answers": {"pain": "mild", "sleep": "poor", "meds": "yes"},
}
TEXTS = {
    "plain say": "Hello {{ user_name }}, how are you today?",
    "condition": "{% if visits > 2 %}Welcome back, {{ user_name }}.{% else %}Hi.{% endif %}",
    "loop": "{% for k, v in answers.items() %}{{ k }}: {{ v | upper }}\n{% endfor %}",
    "filters": "{{ flags | join(', ') | title }} ({{ flags | length }} flags)",
}
VALUES = {"set list": "{{ flags + ['tired'] }}", "set number": "{{ visits + 1 }}"}


class _Native(NativeEnvironment, SandboxedEnvironment):
    pass


_TEXT = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
_NATIVE = _Native(undefined=StrictUndefined, autoescape=False)


@lru_cache(maxsize=256)
def _plain(source: str, native: bool) -> Template:
    return (_NATIVE if native else _TEXT).from_string(source)


def plain_text(source: str, context: dict[str, Any]) -> Any:
    return _plain(source, False).render(context)


def plain_value(source: str, context: dict[str, Any]) -> Any:
    return _plain(source, True).render(context)


def per_render(render: Callable[[str, dict[str, Any]], Any], source: str, n: int) -> float:
    render(source, CONTEXT)  # compile once, outside the timing
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            render(source, CONTEXT)
        best = min(best, (time.perf_counter() - start) / n)
    return best


Render = Callable[[str, dict[str, Any]], Any]


def paired(plain: Render, bounded: Render, source: str, rounds: int = 60) -> tuple[float, float]:
    """The best time per render of each, in alternating short rounds: on a busy machine
    both meet its quiet moments alike."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for index, render in enumerate((plain, bounded)):
            best[index] = min(best[index], per_render(render, source, 100))
    return best[0], best[1]


def in_thread(source: str, n: int) -> float:
    result: list[float] = []
    worker = threading.Thread(target=lambda: result.append(per_render(render_text, source, n)))
    worker.start()
    worker.join()
    return result[0]


def measure() -> float:
    """Print the table for the cgraph on the path; the geometric mean ratio."""
    print(f"{'template':<12} {'plain µs':>9} {'bounded µs':>11} {'ratio':>6}")
    ratios = []
    cases = [(k, s, plain_text, render_text) for k, s in TEXTS.items()]
    cases += [(k, s, plain_value, render_value) for k, s in VALUES.items()]
    for name, source, plain, bounded in cases:
        base, ours = paired(plain, bounded, source)
        ratios.append(ours / base)
        print(f"{name:<12} {base * 1e6:>9.1f} {ours * 1e6:>11.1f} {ours / base:>5.2f}×")
    geo = 1.0
    for r in ratios:
        geo *= r
    geo **= 1 / len(ratios)
    print(f"\ngeometric mean ratio: {geo:.2f}×, worst {max(ratios):.2f}×")
    thread = in_thread(TEXTS["plain say"], 2_000)
    print(f"plain say from a worker thread: {thread * 1e6:.1f} µs per render")
    return geo


def before(revision: str) -> None:
    """The same measurement of revision's cgraph, in a process of its own."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "cgraph"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        print(f"== before: {revision}")
        env = {**os.environ, "CGRAPH_BENCH_SOURCE": folder}
        subprocess.run([sys.executable, __file__], env=env, check=True)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--before":
        before(sys.argv[2])
        print("== after: this tree")
    measure()


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("render"):
        main()
