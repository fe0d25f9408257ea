"""LLM calls per turn on the example graphs, and the cacheable-prefix share of prompts.

Each graph in graphs/ is walked for up to 40 turns by a deterministic scripted model:
on odd turns the user chats (the action state stays), on even turns an exit holds (the
first one not yet taken most often). Printed per graph:

- calls per turn: on the first turn, on turns that stay in their state (aim: exactly 1),
  on turns that move, and overall; memory-extraction calls (`memory.store`, with an
  instant memory store attached) are counted apart;
- the cacheable-prefix share: for each request, the share of its characters (messages
  serialised in order) that equals the previous request *for the same state* from the
  start — what a provider's prompt cache can reuse.

Run: `.venv/bin/python bench/bench_prompts.py [graphs...]`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from cgraph.backends.llm.scripted import ScriptedModel  # noqa: E402
from cgraph.errors import CgraphError  # noqa: E402
from cgraph.runtime.ports import (  # noqa: E402
    LLMRequest,
    Memory,
    NewMemory,
)
from cgraph.session import Session  # noqa: E402
from cgraph.spec.load import load_graph  # noqa: E402

TURNS = 40


class Walker:
    """Answers any request: stays on chatty turns, otherwise takes a rotating exit."""

    def __init__(self) -> None:
        self.turn = 0
        self.taken: Counter[str] = Counter()

    def __call__(self, request: LLMRequest) -> dict[str, Any]:
        ids = [o.id for o in request.options]
        if request.kind == "action":
            chatty = self.turn % 2 == 1
            if request.entered_this_turn or chatty or not ids:
                return {"exit": "stay", "reason": "chat", "reply": f"Reply in {request.state}."}
        choice = self._rotate(request.state, ids)
        answer = {"exit": choice, "reason": "walk", "reply": ""}
        if request.kind == "reflection":
            answer["note"] = f"note at {request.state}"
        return answer

    def _rotate(self, state: str, ids: list[str]) -> str:
        # Prefer exits that do not end the conversation, so walks stay long.
        ordered = [i for i in ids if i != "END"] or ids
        choice = ordered[self.taken[state] % len(ordered)]
        self.taken[state] += 1
        return choice


def flatten(request: LLMRequest) -> str:
    return "".join(f"\x00{m['role']}\x01{m['content']}" for m in request.messages)


def common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:  # binary search on prefix equality: fast for long prompts
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def prefix_share(requests: list[LLMRequest]) -> tuple[float, int]:
    previous: dict[tuple[str, str], str] = {}
    shared = total = compared = 0
    for request in requests:
        text = flatten(request)
        key = (request.kind, request.state)
        if key in previous:
            shared += common_prefix(previous[key], text)
            total += len(text)
            compared += 1
        previous[key] = text
    return (shared / total if total else 0.0), compared


class ListMemory:
    """An instant memory store, so extraction calls are made and counted."""

    def __init__(self) -> None:
        self.items: list[Memory] = []

    def recall(self, user_id: str, queries: Sequence[str], **_: Any) -> list[Memory]:
        return self.items[-3:]

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        new = [
            Memory(
                str(len(self.items) + i),
                m.text,
                m.tier,
                user_id,
                m.session_id,
                m.state,
                m.turn,
                0.0,
            )
            for i, m in enumerate(items)
        ]
        self.items += new
        return new

    def list(self, user_id: str, **_: Any) -> list[Memory]:
        return list(self.items)

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return len(self.items)


def walk(path: Path) -> dict[str, Any]:
    walker = Walker()
    extract = {"memories": [{"tier": "task", "text": "The user said something."}]}
    model = ScriptedModel({"*": walker, "start": walker, "extract": extract})
    session = Session.start(load_graph(path), model=model, memory=ListMemory())
    first, stay_calls, move_calls, extract_calls = 0, [], [], 0
    for number in range(1, TURNS + 1):
        walker.turn = number
        if session.completed:
            break
        turn = session.send("Tell me more." if number % 2 else "Yes, that's right.")
        if number == 1:
            first = turn.llm_calls
        else:
            (move_calls if turn.transitions else stay_calls).append(turn.llm_calls)
        extract_calls += turn.memory_calls
    share, compared = prefix_share(model.requests)
    turns = len(stay_calls) + len(move_calls)
    return {
        "graph": path.stem,
        "turns": turns + 1,
        "first": first,
        "stay": sum(stay_calls) / len(stay_calls) if stay_calls else 0.0,
        "stay_max": max(stay_calls, default=0),
        "move": sum(move_calls) / len(move_calls) if move_calls else 0.0,
        "all": (sum(stay_calls) + sum(move_calls)) / turns if turns else 0.0,
        "extract": extract_calls / (turns + 1),
        "share": share,
        "compared": compared,
    }


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted((ROOT / "graphs").glob("*.yaml"))
    print("LLM calls per turn (first turn, turns that stay: mean and max, turns that move,")
    print("all turns after the first), memory-extraction calls per turn, cacheable prefix\n")
    print(
        f"{'graph':<22} {'turns':>5} {'first':>5} {'stay':>6} {'max':>4} {'move':>6} "
        f"{'all':>6} {'extract':>7} {'prefix':>7}"
    )
    for path in paths:
        try:
            r = walk(path)
        except CgraphError as err:
            print(f"{path.stem:<22} skipped: {err.message}")
            continue
        calls = f"{r['first']:>5} {r['stay']:>6.2f} {r['stay_max']:>4} {r['move']:>6.2f}"
        print(
            f"{r['graph']:<22} {r['turns']:>5} {calls} {r['all']:>6.2f} {r['extract']:>7.2f} "
            f"{r['share']:>7.1%}"
        )


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("prompts"):
        main(sys.argv[1:])
