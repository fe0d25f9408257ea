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
