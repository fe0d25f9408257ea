"""Run the real `cgraph run --jsonl` on an attack graph with time and memory limits.

`attack_graph` places one template in one field of a small graph that reaches every
templated field in its first turn (an annotation that sets a value, a recall, a tool
call, a talking state with its prompt texts, `say:` and `fallback:`, `when` exits).
`run` starts the real command under the probe's limits (offline semantic mode: no
network, the embedding model on disk), and `stored` reads back what the store kept.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

FALLBACK = "Sorry, something went wrong."
FIELDS = (
    "say",
    "silent_say",
    "set",
    "queries",
    "arguments",
    "fallback",
    "objective",
    "actions",
    "guidelines",
    "when",
)
"""Where an attack is placed: the templated fields of a state the runtime renders."""
EVENT_FIELDS = {"silent_say": "say", "guidelines": "action_guidelines"}
"""The field a `render_failed` event names, where it is not the placement's name."""
SECONDS = 60  # wall clock for one process; its CPU is held to 20 s
CPU_SECONDS = 20
MEMORY_BYTES = 4_000_000_000  # address space: the embedding model's torch reserves a lot
TOOLS = "def echo(**arguments):\n    return arguments\n"


def talk_state() -> dict[str, Any]:
    """A talking state: an action with every prompt text and a plain `say:`."""
    return {
        "type": "action",
        "objective": "Chat with the user.",
        "actions": ["Greet the user."],
        "intra_state_navigation_guidelines": ["Stay here until the user leaves."],
        "action_guidelines": ["Be brief."],
        "boundary_constraints": ["Stay polite."],
        "say": "Hello there.",
        "exit_conditions": [{"description": "The user says goodbye.", "next_state": "END"}],
    }


def expression(template: str) -> str | None:
    """The expression of a lone `{{ expression }}`, as a `when:` holds it; else None."""
    text = template.strip()
    if not (text.startswith("{{") and text.endswith("}}")) or text.count("{{") != 1:
        return None
    return text[2:-2].strip()


def attack_graph(field: str, template: str) -> dict[str, Any]:
    """A graph whose first turn renders `template` in `field` (see `FIELDS`)."""
    talk = talk_state()
    mark: dict[str, Any] = {"type": "annotation", "objective": "Mark.", "set": {"v": "1"}}
    mark["next_state"] = "talk"
    states: dict[str, Any] = {"mark": mark, "talk": talk}
    doc: dict[str, Any] = {"cgraph": 1, "name": "attack", "start": "mark", "fallback": FALLBACK}
    doc["variables"] = {"x": [1, 2], "user_name": "Ada"}
    if field == "say":
        talk["say"] = template
    elif field == "silent_say":
        mark["say"] = template
    elif field == "set":
        mark["set"] = {"v": template}
    elif field == "queries":
        mark["next_state"] = "look"
        states["look"] = {"type": "recall", "objective": "Look.", "queries": [template]}
        states["look"]["next_state"] = "talk"
    elif field == "arguments":
        mark["next_state"] = "call"
        states["call"] = {"type": "side_effect", "objective": "Call.", "tool": "echo"}
        states["call"] |= {"arguments": {"text": template}, "next_state": "talk"}
        parameters = {"type": "object", "properties": {"text": {}}}
        doc["tools"] = [{"name": "echo", "handler": "attack_tools:echo", "parameters": parameters}]
    elif field == "fallback":  # shown when the say fails
        talk |= {"fallback": template, "say": "{{ 1/0 }}"}
    elif field == "objective":
        talk["objective"] = template
    elif field == "actions":
        talk["actions"] = [template]
    elif field == "guidelines":
        talk["action_guidelines"] = [template]
    elif field == "when":
        del mark["next_state"]
        exits = [{"when": expression(template), "next_state": "talk"}, {"next_state": "talk"}]
        mark["exit_conditions"] = exits
    else:
        raise ValueError(f"no field {field!r}: one of {FIELDS}")
    return {**doc, "states": states}


def write_graph(folder: Path, field: str, template: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attack_tools.py").write_text(TOOLS, encoding="utf-8")
    path = folder / "graph.yaml"
    text = yaml.safe_dump(attack_graph(field, template), width=10**6, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def _limits() -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(
    graph: Path, store: Path, lines: str, *more: str, model: str = "semantic"
) -> subprocess.CompletedProcess[str]:
    """`cgraph run GRAPH --jsonl` fed `lines`, under the limits (a hang is a
    `TimeoutExpired`)."""
    command = [sys.executable, "-m", "cgraph", "run", str(graph), "--jsonl", "--model", model]
    return subprocess.run(
        [*command, "--store", str(store), *more],
        input=lines,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=SECONDS,
        preexec_fn=_limits,  # setrlimit only: safe between fork and exec
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"},
    )


def replies(done: subprocess.CompletedProcess[str], where: str = "") -> list[dict[str, Any]]:
    """The turns printed, once the process is known to have ended cleanly."""
    shown = f"{where}: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, shown  # a negative code is a crash signal
    assert "Traceback" not in done.stderr + done.stdout, shown
    assert "internal error" not in done.stderr.lower(), shown
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def stored(store: Path, kind: str | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """(turn, kind, data) of every event in the store, in order; only `kind`'s if given."""
    with sqlite3.connect(store / "sessions.sqlite") as db:
        rows = db.execute("SELECT turn, kind, data FROM events ORDER BY seq").fetchall()
    events = [(turn, k, json.loads(data)) for turn, k, data in rows]
    return [e for e in events if kind is None or e[1] == kind]
