"""Helpers for the runtime tests: write a graph to a folder, build scripted answers."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph


def write(folder: Path, text: str, name: str = "g.yaml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def graph(folder: Path, text: str, name: str = "g.yaml") -> Graph:
    return load_graph(write(folder, text, name))


def stay(reply: str = "ok", reason: str = "nothing holds yet") -> dict[str, Any]:
    return {"exit": "stay", "reason": reason, "reply": reply}


def go(exit_id: str, reason: str = "it holds", reply: str = "") -> dict[str, Any]:
    return {"exit": exit_id, "reason": reason, "reply": reply}


def pick(exit_id: str, reason: str = "it holds") -> dict[str, Any]:
    return {"exit": exit_id, "reason": reason}


def action(name: str, exits: dict[str, str], **extra: str) -> str:
    """YAML of an action state with `exits` (target → description)."""
    lines = [
        f"  {name}:",
        "    type: action",
        f"    objective: Objective of {name}.",
        f"    actions: [Do the work of {name}.]",
        "    intra_state_navigation_guidelines: [Stay until an exit holds.]",
        "    action_guidelines: [Be brief.]",
        "    boundary_constraints: [Never invent facts.]",
        "    exit_conditions:",
    ]
    for target, description in exits.items():
        lines += [
            f"      - description: {description}",
            f"        next_state: {target.split('~')[0]}",
        ]
    lines += [f"    {k}: {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


HEADER = """\
cgraph: 1
name: {name}
start: {start}
states:
"""


def simple(name: str = "g", start: str = "a", body: str = "", top: str = "") -> str:
    return top + HEADER.format(name=name, start=start) + body


class FakeMemory:
    def __init__(self, texts: list[str] | None = None, fail: bool = False) -> None:
        from cgraph.runtime.ports import Memory

        self.fail = fail
        self.queries: list[tuple[str, list[str], tuple[str, ...]]] = []
        self.added: list[object] = []
        self.items = [
            Memory(f"m{i}", t, "personal", "u", "s0", "x", 1, 0.0, score=0.9 - i / 10)
            for i, t in enumerate(texts or [])
        ]

    def recall(self, user_id, queries, *, tiers=(), top_k=5, min_score=None, session_id=None):  # type: ignore[no-untyped-def]
        if self.fail:
            from cgraph.errors import MemoryStoreError

            raise MemoryStoreError("chroma is down")
        self.queries.append((user_id, list(queries), tuple(tiers)))
        return self.items[:top_k]

    def add(self, user_id, items):  # type: ignore[no-untyped-def]
        if self.fail:
            raise RuntimeError("cannot write")
        from cgraph.runtime.ports import Memory

        stored = [
            Memory(
                f"n{len(self.added) + i}",
                it.text,
                it.tier,
                user_id,
                it.session_id,
                it.state,
                it.turn,
                0.0,
            )
            for i, it in enumerate(items)
        ]
        self.added.extend(items)
        return stored

    def list(self, user_id, *, tiers=(), session_id=None):  # type: ignore[no-untyped-def]
        return list(self.items)

    def delete(self, user_id, ids=None):  # type: ignore[no-untyped-def]
        if self.fail:
            raise RuntimeError("cannot delete")
        self.deleted = list(ids or [])
        return len(self.deleted)

    def count(self, user_id):  # type: ignore[no-untyped-def]
        if self.fail:
            raise RuntimeError("cannot count")
        return len(self.items)


def two_actions(tmp_path: Path) -> Graph:
    """Two action states: `a` leads to `b` or END, `b` (which says hello) back to `a`."""
    return graph(
        tmp_path,
        simple(
            body=action("a", {"b": "The user is ready.", "END": "The user says goodbye."})
            + action("b", {"a": "The user wants to start over."}, say="Welcome to b.")
        ),
    )


# A recall state that renders its queries, then an action that can end the session.
RECALL = simple(
    start="m",
    body="""\
  m:
    type: recall
    objective: Remember.
    queries: ["about {{ message }}", "fixed query"]
    tiers: [personal]
    top_k: 2
    next_state: a
"""
    + action("a", {"END": "done"}),
    top="memory: {store: off}\n",
)
