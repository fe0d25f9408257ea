"""Engine overhead per step and bytes stored per step: cgraph next to LangGraph.

The same 5-node flow — receive input → recall → reason or clarify → respond → store
memory, every node trivial — runs 1,000 turns:

- as a LangGraph graph with `SqliteSaver` (durability "sync") and with no checkpointer;
- as a cgraph graph (bench/data/flow.yaml) with an instant scripted model and a durable
  `SQLiteStore` (synchronous=NORMAL, the default; and FULL), and with the in-memory store.

Times are the best of `--repeat` runs (LangGraph's durable run, which takes minutes, once);
bytes per step are the SQLite file (WAL checkpointed) divided by the steps taken.

Run: `.venv/bin/python bench/bench_engine.py [--turns N]`. Needs the `bench` extra
(langgraph, langgraph-checkpoint-sqlite); without it only cgraph's figures are printed.

`--long N` runs one session of N turns (10,000 by default) on SQLite and prints the CPU
ms per step of each tenth of it (a flat curve: the last block costs what the first does),
the process's RSS at each block's end, then resumes the stored session in a fresh process
and times it (seconds and peak RSS: what a resume costs must not grow with the session),
next to LangGraph without a checkpointer over the same turns.

`--instructions [--against REV]` counts CPU instructions per step under valgrind's
callgrind (which a busy machine cannot skew) for this tree and for a git revision checked
out into a temporary folder (by default the last commit before the folder layout; `--also
COMMIT` adds more), in one run, next to each tree's wall-clock ms/step
(`bench/engine_steps.py` drives them all).
"""

from __future__ import annotations

import argparse
import io
import operator
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from cgraph.backends.llm.scripted import ScriptedModel  # noqa: E402
from cgraph.backends.store.memory import InMemorySessionStore  # noqa: E402
from cgraph.backends.store.sqlite import SQLiteStore  # noqa: E402
from cgraph.runtime.ports import (  # noqa: E402
    LLMRequest,
    Memory,
    NewMemory,
)
from cgraph.session import Session  # noqa: E402
from cgraph.spec.load import load_graph  # noqa: E402

FLOW = ROOT / "bench" / "data" / "flow.yaml"
STEPS = ROOT / "bench" / "engine_steps.py"
BEFORE_LAYOUT = "f5bfd89"  # the last commit before cgraph/spec, runtime, backends, cli
LANGGRAPH_STEPS = 5  # receive, recall, reason|clarify, respond, store


def message(number: int) -> str:
    return f"question {number}?" if number % 3 == 0 else f"statement number {number}"


# ----- cgraph ---------------------------------------------------------------------------


class InstantMemory:
    """A memory store that answers at once (the recall node is trivial in both flows)."""

    def recall(self, user_id: str, queries: Sequence[str], **_: Any) -> list[Memory]:
        return []

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return []

    def list(self, user_id: str, **_: Any) -> list[Memory]:
        return []

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return 0


def instant_model() -> ScriptedModel:
    def respond(request: LLMRequest) -> dict[str, str]:
        if request.entered_this_turn:
            return {"exit": "stay", "reason": "answered", "reply": "Here is my answer."}
        return {"exit": "receive", "reason": "new input", "reply": ""}

    def decide(request: LLMRequest) -> dict[str, str]:
        unclear = request.user_messages[-1].endswith("?")
        return {"exit": "clarify" if unclear else "reason", "reason": "by the input"}

    return ScriptedModel({"respond": respond, "decide": decide})


def run_cgraph(store: Any, turns: int) -> tuple[float, int, Session]:
    session = Session.start(
        load_graph(FLOW), model=instant_model(), store=store, memory=InstantMemory()
    )
    session.send("hello")  # the first turn enters the graph; time the steady state
    steps_before = len(session.audit)
    started = time.perf_counter()
    for number in range(turns):
        session.send(message(number))
    elapsed = time.perf_counter() - started
    steps = len(session.audit) - steps_before
    return elapsed, steps, session


# ----- LangGraph --------------------------------------------------------------------------


class FlowState(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]
    memories: list[str]
    route: str


def langgraph_app(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    def receive(state: FlowState) -> dict[str, Any]:
        return {}

    def recall(state: FlowState) -> dict[str, Any]:
        return {"memories": []}

    def reason(state: FlowState) -> dict[str, Any]:
        return {"route": "reason"}

    def clarify(state: FlowState) -> dict[str, Any]:
        return {"route": "clarify"}

    def respond(state: FlowState) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": "Here is my answer."}]}

    def store(state: FlowState) -> dict[str, Any]:
        return {}

    def pick(state: FlowState) -> str:
        return "clarify" if state["messages"][-1]["content"].endswith("?") else "reason"

    builder = StateGraph(FlowState)
    for name, node in [
        ("receive", receive),
        ("recall", recall),
        ("reason", reason),
        ("clarify", clarify),
        ("respond", respond),
        ("store", store),
    ]:
        builder.add_node(name, node)
    builder.add_edge(START, "receive")
    builder.add_edge("receive", "recall")
    builder.add_conditional_edges("recall", pick, ["reason", "clarify"])
    builder.add_edge("reason", "respond")
    builder.add_edge("clarify", "respond")
    builder.add_edge("respond", "store")
    builder.add_edge("store", END)
    return builder.compile(checkpointer=checkpointer)


def run_langgraph(checkpointer: Any, turns: int) -> float:
    app = langgraph_app(checkpointer)
    config = {"configurable": {"thread_id": "bench"}}
    kwargs: dict[str, Any] = {"durability": "sync"} if checkpointer is not None else {}
    first = {"messages": [{"role": "user", "content": "hello"}], "memories": [], "route": ""}
    app.invoke(first, config, **kwargs)
    started = time.perf_counter()
    for number in range(turns):
        state = {"messages": [{"role": "user", "content": message(number)}]}
        app.invoke(state, config, **kwargs)
    return time.perf_counter() - started


# ----- reporting --------------------------------------------------------------------------


def file_bytes(path: Path) -> int:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def row(name: str, seconds: float, steps: int, turns: int, size: int | None) -> list[str]:
    per_step = seconds / steps * 1000
    per_turn = seconds / turns * 1000
    stored = f"{size / steps:,.0f}" if size is not None else "-"
    total = f"{size / 1e6:,.2f}" if size is not None else "-"
    return [name, f"{per_step:.3f}", f"{per_turn:.3f}", stored, total]


def table(rows: list[list[str]]) -> None:
    head = ["flow", "ms/step", "ms/turn", "bytes/step", "file MB"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for line in [head, *rows]:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )


def best_cgraph(folder: Path, mode: str | None, turns: int, repeat: int) -> tuple[float, int, int]:
    """The fastest of `repeat` runs (the machine is shared: the minimum is the least noisy),
    and the store's size after one run."""
    best, steps, size = float("inf"), 0, 0
    for attempt in range(repeat):
        if mode is None:
            seconds, steps, _ = run_cgraph(InMemorySessionStore(), turns)
        else:
            path = folder / f"cgraph-{mode}-{attempt}.sqlite"
            seconds, steps, session = run_cgraph(SQLiteStore(path, synchronous=mode), turns)  # type: ignore[arg-type]
            session.close()
            size = file_bytes(path)
        best = min(best, seconds)
    return best, steps, size


def measure(turns: int, repeat: int) -> None:
    rows: list[list[str]] = []
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for mode in ("NORMAL", "FULL"):
            seconds, steps, size = best_cgraph(folder, mode, turns, repeat)
            rows.append(row(f"cgraph SQLiteStore sync={mode}", seconds, steps, turns, size))
            ratios[f"cgraph-{mode}"] = seconds / steps
        seconds, steps, _ = best_cgraph(folder, None, turns, repeat)
        rows.append(row("cgraph in-memory store", seconds, steps, turns, None))
        ratios["cgraph-memory"] = seconds / steps
        steps_per_turn = steps / turns
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError as err:
            print(f"note: LangGraph is not installed ({err}); `pip install -e .[bench]`")
        else:
            path = folder / "langgraph.sqlite"
            saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
            seconds = run_langgraph(saver, turns)
            lg_steps = turns * LANGGRAPH_STEPS
            size = file_bytes(path)
            rows.append(row("LangGraph SqliteSaver sync", seconds, lg_steps, turns, size))
            ratios["langgraph-sqlite"] = seconds / lg_steps
            seconds = min(run_langgraph(None, turns) for _ in range(repeat))
            rows.append(row("LangGraph no checkpointer", seconds, lg_steps, turns, None))
            ratios["langgraph-none"] = seconds / lg_steps
    print(f"{turns} turns; a cgraph turn here is {steps_per_turn:.0f} steps (state transitions,")
    print(f"3 instant LLM calls); a LangGraph invoke is {LANGGRAPH_STEPS} node steps\n")
    table(rows)
    if "langgraph-sqlite" in ratios:
        speedup = ratios["langgraph-sqlite"] / ratios["cgraph-NORMAL"]
        print(f"\ndurable per-step: LangGraph SqliteSaver / cgraph SQLiteStore = {speedup:.1f}x")
        full = ratios["langgraph-sqlite"] / ratios["cgraph-FULL"]
        print(f"durable per-step with fsync every step (sync=FULL): {full:.1f}x")


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


RESUME = """
import resource, sys, time
started = time.perf_counter()
from bench_engine import instant_model
from cgraph.session import Session
session = Session.resume(sys.argv[1], store=sys.argv[2], model=instant_model())
session.send("one more")
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{seconds:.3f} {peak:.0f}")
"""


def resumed(session_id: str, folder: Path) -> tuple[float, float]:
    """(seconds, peak MB) of a fresh process that resumes the session and takes a turn."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r})\n" + RESUME
    done = subprocess.run(
        [sys.executable, "-c", script, session_id, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(done.stderr)
    seconds, peak = done.stdout.split()
    return float(seconds), float(peak)


def long_session(turns: int) -> None:
    """One session of `turns` turns: CPU ms per step by tenth, RSS, and a resume."""
    blocks = 10
    size = max(turns // blocks, 1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = instant_model()
        session = Session.start(load_graph(FLOW), model=model, store=folder, memory=InstantMemory())
        session.send("hello")
        rows = []
        for block in range(blocks):
            cpu = time.process_time()
            for number in range(block * size, (block + 1) * size):
                session.send(message(number))
            cpu = time.process_time() - cpu
            model.requests.clear()  # the scripted model keeps every request; cgraph does not
            rows.append((block, cpu, rss_mb()))
        session.close()
        steps = 6 * size  # a turn of the flow is 6 steps
        lg: list[float | None] = []
        try:
            app = langgraph_app(None)
        except ImportError:
            app = None
        if app is not None:
            config = {"configurable": {"thread_id": "long"}}
            app.invoke(
                {"messages": [{"role": "user", "content": "hi"}], "memories": [], "route": ""},
                config,
            )
            for block in range(blocks):
                cpu = time.process_time()
                for number in range(block * size, (block + 1) * size):
                    app.invoke({"messages": [{"role": "user", "content": message(number)}]}, config)
                lg.append((time.process_time() - cpu) / (LANGGRAPH_STEPS * size) * 1000)
        seconds, peak = resumed(session.id, folder)
        fresh = Session.start(load_graph(FLOW), model=instant_model(), store=folder)
        fresh.send("hello")
        fresh.close()
        first_seconds, first_peak = resumed(fresh.id, folder)
    print(f"one session of {turns} turns, SQLite store; CPU ms per step by block of {size} turns\n")
    head = "block      cgraph ms/step   RSS MB   LangGraph (no checkpointer) ms/step"
    print(head)
    for (block, cpu, rss), other in zip(rows, lg or [None] * blocks, strict=True):
        lg_text = f"{other:.3f}" if other is not None else "-"
        span = f"{block * size + 1}-{(block + 1) * size}"
        print(f"{span:<12} {cpu / steps * 1000:>12.3f} {rss:>8.0f} {lg_text:>20}")
    print(f"\nlast block / first block: {rows[-1][1] / rows[0][1]:.2f}x")
    for label, took, most in (
        (f"{turns}-turn session", seconds, peak),
        ("1-turn session", first_seconds, first_peak),
    ):
        print(f"resume + one turn, {label:<20} {took:.3f} s, peak RSS {most:.0f} MB")


def profile(turns: int) -> None:
    import cProfile
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "p.sqlite")
        profiler = cProfile.Profile()
        profiler.enable()
        run_cgraph(store, turns)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


# ----- instructions per step, this tree against another revision ------------------------


def checkout(revision: str, folder: Path) -> Path:
    """The package of `revision`, extracted into `folder` (the work tree is not touched)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "cgraph"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def driven(tree: Path, turns: int, store: str, *prefix: str) -> tuple[int, float, str]:
    """(steps, seconds, stderr) of one run of the flow with `tree`'s cgraph."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [*prefix, sys.executable, str(STEPS), str(turns), store, str(FLOW)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    steps, seconds = done.stdout.split()
    return int(steps), float(seconds), done.stderr


def counted(tree: Path, turns: int, store: str, folder: Path) -> tuple[int, int]:
    """(instructions, steps) of the measured turns: the second of callgrind's dumps."""
    out = folder / f"callgrind-{tree.name}.out"
    valgrind = ["valgrind", "--tool=callgrind", "--dump-before=getppid"]
    steps, _, _ = driven(tree, turns, store, *valgrind, f"--callgrind-out-file={out}")
    totals = re.search(r"^totals: (\d+)", Path(f"{out}.2").read_text(), re.MULTILINE)
    if totals is None:
        raise RuntimeError(f"callgrind wrote no totals to {out}.2")
    return int(totals.group(1)), steps


def instructions(turns: int, revisions: Sequence[str], store: str, repeat: int) -> None:
    if not shutil.which("valgrind"):
        print("valgrind is not installed (apt-get install valgrind): no instruction counts")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trees = {"this tree": ROOT}
        for revision in revisions:
            trees[revision] = checkout(revision, folder / revision)
        print(f"{turns} turns of bench/data/flow.yaml after 5 warm-up turns, {store} store\n")
        best = f"ms/step (best of {repeat})"
        print(f"{'cgraph':<12} {'instructions/step':>18} {best:>22}")
        for name, tree in trees.items():
            count, steps = counted(tree, turns, store, folder)
            runs = [driven(tree, turns, store) for _ in range(repeat)]
            ms = min(seconds / steps for steps, seconds, _ in runs) * 1000
            print(f"{name:<12} {count / steps / 1e6:>16.3f} M {ms:>22.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per fast flow (best kept)")
    parser.add_argument("--profile", action="store_true", help="profile cgraph instead")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per step (callgrind)"
    )
    parser.add_argument("--against", default=BEFORE_LAYOUT, help="the revision to compare with")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="COMMIT",
        help="another revision to count in the same run (repeatable)",
    )
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument(
        "--long",
        type=int,
        nargs="?",
        const=10_000,
        default=0,
        metavar="TURNS",
        help="one long session: the per-block cost curve and a resume (10,000 turns)",
    )
    args = parser.parse_args(argv)
    if args.long:
        long_session(args.long)
    elif args.instructions:
        instructions(args.turns, [args.against, *args.also], args.store, args.repeat)
    elif args.profile:
        profile(args.turns)
    else:
        measure(args.turns, args.repeat)


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    # The long session has a file of its own: the side-by-side table stays beside it.
    with recorded("engine_long" if "--long" in sys.argv else "engine"):
        main()
