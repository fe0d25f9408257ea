"""`cgraph run --trace FILE`: the spans `cgraph serve` exports, as JSON lines, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands import CGRAPH, ran
from tests.serving import GRAPHS, SCRIPT


def test_each_turn_of_a_run_is_a_span_with_its_steps_and_model_calls(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    args = ["run", str(GRAPHS / "talk.yaml"), "--jsonl", "--model", f"scripted:{SCRIPT}"]
    done = ran(
        [str(CGRAPH), *args, "--store", str(tmp_path), "--trace", str(trace)], ["hi", "again"]
    )
    assert done.returncode == 0, done.stderr
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    turns = [s for s in spans if s["name"] == "cgraph.turn"]
    assert [t["attributes"]["cgraph.turn"] for t in turns] == [1, 2]
    assert all(t["parent_id"] is None and t["status"] == "unset" for t in turns)
    for turn in turns:
        steps = [s for s in spans if s["parent_id"] == turn["span_id"]]
        assert [s["name"] for s in steps][-1] == "cgraph.step talk"
        (call,) = [s for s in spans if s["parent_id"] == steps[-1]["span_id"]]
        assert call["name"] == f"chat scripted:{SCRIPT}"
        assert call["attributes"]["cgraph.state"] == "talk"
        assert '"reply": "ok"' in call["attributes"]["gen_ai.completion"]
        assert turn["start"] <= call["start"] <= call["end"] <= turn["end"]
        assert {s["trace_id"] for s in (turn, *steps, call)} == {turn["trace_id"]}
