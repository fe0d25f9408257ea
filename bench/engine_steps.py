"""The benchmark flow's steady state, marked for callgrind: `bench_engine.py --instructions`.

    python bench/engine_steps.py TURNS memory|sqlite FLOW

Runs bench/data/flow.yaml with an instant scripted model, warms up for a few turns, and
calls `os.getppid()` just before and just after the measured turns: run under
`valgrind --tool=callgrind --dump-before=getppid`, the second dump holds exactly the
instructions of those turns. Prints the steps taken and their wall-clock seconds. It
imports cgraph from whichever tree is on PYTHONPATH (today's rooms, the folder layout
before them, or the flat one before that), so one script counts them all.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

try:  # the runtime in rooms, Session beside it
    from cgraph.backends.llm.scripted import ScriptedModel
    from cgraph.backends.store.memory import InMemorySessionStore
    from cgraph.backends.store.sqlite import SQLiteStore
    from cgraph.session import Session
    from cgraph.spec import templating
    from cgraph.spec.load import load_graph
except ImportError:
    try:  # the folder layout: cgraph/spec, runtime, backends
        from cgraph.runtime.session import Session  # type: ignore[no-redef]
        from cgraph.runtime.store import (  # type: ignore[no-redef]
            InMemorySessionStore,
            SQLiteStore,
        )

        from cgraph.backends.llm.scripted import ScriptedModel  # type: ignore[no-redef]
        from cgraph.spec import templating
        from cgraph.spec.load import load_graph
    except ImportError:  # the flat layout, before the folders
        from cgraph.loader import load_graph  # type: ignore[no-redef]
        from cgraph.store import InMemorySessionStore, SQLiteStore  # type: ignore[no-redef]

        from cgraph.session import Session  # type: ignore[no-redef]
        from cgraph.testing import ScriptedModel  # type: ignore[no-redef,attr-defined]

        templating = None  # type: ignore[assignment]

WARM_UP = 5


class InstantMemory:
    """A memory store that answers at once."""

    def recall(self, user_id: str, queries: Any, **_: Any) -> list[Any]:
        return []

    def add(self, user_id: str, items: Any) -> list[Any]:
        return []

    def list(self, user_id: str, **_: Any) -> list[Any]:
        return []

    def delete(self, user_id: str, ids: Any = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return 0


def respond(request: Any) -> dict[str, str]:
    if request.entered_this_turn:
        return {"exit": "stay", "reason": "answered", "reply": "Here is my answer."}
    return {"exit": "receive", "reason": "new input", "reply": ""}


def decide(request: Any) -> dict[str, str]:
    unclear = request.user_messages[-1].endswith("?")
    return {"exit": "clarify" if unclear else "reason", "reason": "by the input"}


def widen_render_budget() -> None:
    """Valgrind runs code ~50x slower: a template compiled under the 1 s render budget would
    time out and the turn would take the fallback path. The budget's bookkeeping (the
    watchdog's lock and its timers) is still paid and counted."""
    for name in ("render_text", "render_value", "render_template"):
        defaults = getattr(getattr(templating, name, None), "__kwdefaults__", None) or {}
        if "seconds" in defaults:  # trees before the render budget have none to widen
            defaults["seconds"] = 3600.0


def main() -> None:
    turns, kind, flow = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    widen_render_budget()
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "steps.sqlite")
    store = InMemorySessionStore() if kind == "memory" else SQLiteStore(path)
    model = ScriptedModel({"respond": respond, "decide": decide})
    session = Session.start(load_graph(flow), model=model, store=store, memory=InstantMemory())
    for number in range(WARM_UP):
        session.send(f"warm up {number}")
    before = len(session.audit)
    os.getppid()  # callgrind dumps here: what came before is start-up and warm-up
    started = time.perf_counter()
    for number in range(turns):
        session.send(f"question {number}?" if number % 3 == 0 else f"statement number {number}")
    elapsed = time.perf_counter() - started
    os.getppid()  # ... and here: the measured turns
    print(len(session.audit) - before, elapsed)


if __name__ == "__main__":
    main()
