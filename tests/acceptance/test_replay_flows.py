"""Replay mode over a flow: a conversation that fills slots (up front, refused and asked
again, corrected), branches by `when` and leaves by a global exit is recorded by the real
`cgraph run --record`, then played back by `--model replay:FILE` in a new process with
the same turns, object for object."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import finished
from tests.conftest import GRAPHS

RESTAURANT = [
    "We are 80 people",
    "Table for 4 at 8 pm",
    "9 pm then",
    "Actually make it 3 people",
    "Never mind, forget the booking.",
]
TRANSFER = ["Send 20 dollars to Joe", "make it 25", "yes", "Can I talk to a real person?"]
SCRIPT = """\
ask_recipient:
  - {exit: stay, reason: given, reply: "Noted.", slots: {recipient: Joe, amount: 20}}
confirm_transfer:
  - {exit: stay, reason: read back, reply: "Send $20.00 to Joe?"}
  - {exit: stay, reason: corrected, reply: "Send $25.00 to Joe?", slots: {amount: 25}}
  - {exit: change, reason: agreed}
  - {exit: handoff, reason: asks for a person, reply: ""}
"""


def run(graph: Path, model: str, messages: list[str], store: Path, *more: str) -> list[Any]:
    command = [sys.executable, "-m", "cgraph", "run", str(graph), "--jsonl"]
    done = finished([*command, "--model", model, "--store", str(store), *more], messages)
    assert "Traceback" not in done.stderr
    return [_comparable(json.loads(line)) for line in done.stdout.splitlines() if line.strip()]


def _comparable(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn without what differs between two runs of one conversation (ids, clocks)."""
    kept = {k: v for k, v in turn.items() if k not in ("session", "at", "duration")}
    kept["transitions"] = [
        {k: v for k, v in t.items() if k not in ("at",)} for t in kept.get("transitions", [])
    ]
    return kept


@pytest.mark.parametrize(
    ("graph", "model", "messages"),
    [
        ("restaurant_reservation.yaml", "semantic", RESTAURANT),
        ("money_transfer.yaml", "scripted", TRANSFER),
    ],
)
def test_a_recorded_flow_replays_with_the_same_turns(
    tmp_path: Path, graph: str, model: str, messages: list[str]
) -> None:
    if model == "scripted":
        (tmp_path / "script.yaml").write_text(SCRIPT)
        model = f"scripted:{tmp_path / 'script.yaml'}"
    cassette = tmp_path / "flow.jsonl"
    recorded = run(GRAPHS / graph, model, messages, tmp_path / "a", "--record", str(cassette))
    assert cassette.stat().st_size > 0
    replayed = run(GRAPHS / graph, f"replay:{cassette}", messages, tmp_path / "b")
    assert replayed == recorded
    assert recorded[-1]["completed"]
    states = [t["state"] for t in recorded]
    if graph.startswith("restaurant"):
        assert states == [
            "ask_party_size",
            "ask_party_size",
            "no_availability",
            "confirm",
            "confirm",
            "cancelled",
        ]
        assert "above the maximum 50" in " ".join(recorded[1]["warnings"])
        assert recorded[1]["reply"].startswith("Party size: 80 is above the maximum 50.")
    else:
        assert states == ["confirm_transfer", "confirm_transfer", "confirm_transfer", "handoff"]
        assert recorded[1]["reply"] == "Change amount from 20 to 25?"  # `confirm_correction`
