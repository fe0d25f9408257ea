"""Time to the first words of a reply, streamed, against the whole reply, not streamed.

    python bench/bench_stream.py [--runs 5] [--pieces 40] [--delay 0.02]

One local OpenAI-compatible server (`tests/servers/stream.py`) writes the same answer in
`pieces` chunks `delay` seconds apart, streamed or (for the non-streamed call) sent whole
after the same total time, like a model writing tokens. Each run starts a session through
the real litellm and times one turn: `Session.stream` to its first `Delta`, and
`Session.send` to its `Turn`. A second server first calls a tool (its arguments written
the same way) in a state that offers it, then answers: the same two times for a turn with
a tool call. All are measured in the same run, so their ratios hold on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-local-bench")

from cgraph.runtime.ask.streaming import Delta  # noqa: E402
from cgraph.session import Session  # noqa: E402
from tests.servers.stream import StreamServer  # noqa: E402

REPLY = (
    "Thanks for checking in. Tell me how you have been since we last spoke, and whether "
    "anything about your medication or your sleep has changed this week."
)
GRAPH = """\
cgraph: 1
name: bench_stream
start: a
states:
  a:
    type: action
    objective: Talk with the user.
    actions: [Ask how they are.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    exit_conditions:
      - {description: The user says bye., next_state: END}
"""
TOOLS = """\
memory: {store: "off"}
tools:
  - name: count_files
    description: Count the files in a folder.
    handler: bench_tools:count_files
    parameters:
      type: object
      properties: {folder: {type: string}}
      required: [folder]
"""
HANDLER = "def count_files(folder: str) -> dict:\n    return {'folder': folder, 'count': 3}\n"
CALL = ("count_files", json.dumps({"folder": "the documents folder of this project"}))


def whole(session: Session) -> float:
    began = time.perf_counter()
    session.send("Hello", remember=False)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pieces", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.02)
    options = parser.parse_args()
    answer = json.dumps({"exit": "stay", "reason": "greeting", "reply": REPLY})
    folder = Path(tempfile.mkdtemp())
    plain, tools = folder / "bench_stream.yaml", folder / "bench_tools.yaml"
    plain.write_text(GRAPH)
    tools.write_text(
        TOOLS
        + GRAPH.replace("    exit_conditions:", "    tools: [count_files]\n    exit_conditions:")
    )
    (folder / "bench_tools.py").write_text(HANDLER)
    print(f"answer written in {options.pieces} pieces, {options.delay * 1000:g} ms apart")
    for label, graph, calls in (
        ("plain turn", plain, ()),
        ("turn with a tool call", tools, [CALL]),
    ):
        with StreamServer(
            answer, pieces=options.pieces, delay=options.delay, calls=calls
        ) as server:
            first, full = measure(graph, server.base, options.runs)
        print(f"{label}:")
        print(f"  first words, streamed  : {first * 1000:7.1f} ms (median of {options.runs})")
        print(f"  whole reply, not streamed: {full * 1000:7.1f} ms")
        print(f"  the user reads the first words {full / first:.1f}x sooner")


def measure(graph: Path, base: str, runs: int) -> tuple[float, float]:
    """Median time to the first delta, streamed, and to the whole turn, not streamed."""
    start = {"model": "openai/test-model", "api_base": base}
    whole(Session.start(graph, **start))  # warm: litellm's import and first connection
    firsts, wholes = [], []
    for _ in range(runs):
        wholes.append(whole(Session.start(graph, **start)))
        firsts.append(time_first(Session.start(graph, **start)))
    return statistics.median(firsts), statistics.median(wholes)


def time_first(session: Session) -> float:
    """Time to the first delta of one turn; the rest of the turn is read to its end."""
    began = time.perf_counter()
    took = None
    for chunk in session.stream("Hello", remember=False):
        if took is None and isinstance(chunk, Delta):
            took = time.perf_counter() - began
    return took if took is not None else time.perf_counter() - began


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("stream"):
        main()
