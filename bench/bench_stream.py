"""Time to the first words of a reply, streamed, against the whole reply, not streamed.

    python bench/bench_stream.py [--runs 5] [--pieces 40] [--delay 0.02]

One local OpenAI-compatible server (`bench/stream_server.py`) writes the same answer in
`pieces` chunks `delay` seconds apart, streamed or (for the non-streamed call) sent whole
after the same total time, like a model writing tokens. Each run starts a session through
the real litellm and times one turn: `Session.stream` to its first `Delta`, and
`Session.send` to its `Turn`. Both are measured in the same run, so their ratio holds on a
busy machine.
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

from bench.stream_server import StreamServer  # noqa: E402
from cgraph.runtime.session import Session  # noqa: E402
from cgraph.runtime.streaming import Delta  # noqa: E402

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


def whole(session: Session) -> float:
    began = time.perf_counter()
    session.send("Hello")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pieces", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.02)
    options = parser.parse_args()
    answer = json.dumps({"exit": "stay", "reason": "greeting", "reply": REPLY})
    graph = Path(tempfile.mkdtemp()) / "bench_stream.yaml"
    graph.write_text(GRAPH)
    firsts, wholes = [], []
    with StreamServer(answer, pieces=options.pieces, delay=options.delay) as server:
        start = {"model": "openai/test-model", "api_base": server.base}
        whole(Session.start(graph, **start))  # warm: litellm's import and first connection
        for _ in range(options.runs):
            wholes.append(whole(Session.start(graph, **start)))
            firsts.append(time_first(Session.start(graph, **start)))
    first, full = statistics.median(firsts), statistics.median(wholes)
    print(f"answer written in {options.pieces} pieces, {options.delay * 1000:g} ms apart")
    print(f"first words, streamed : {first * 1000:7.1f} ms (median of {options.runs})")
    print(f"whole reply, not streamed: {full * 1000:7.1f} ms")
    print(f"the user reads the first words {full / first:.1f}x sooner")


def time_first(session: Session) -> float:
    """Time to the first delta of one turn; the rest of the turn is read to its end."""
    began = time.perf_counter()
    took = None
    for chunk in session.stream("Hello"):
        if took is None and isinstance(chunk, Delta):
            took = time.perf_counter() - began
    return took if took is not None else time.perf_counter() - began


if __name__ == "__main__":
    main()
