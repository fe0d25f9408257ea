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


def test_a_memory_extraction_asked_after_the_reply_is_a_root_span_of_its_own(
    tmp_path: Path,
) -> None:
    graph = tmp_path / "talk.yaml"
    graph.write_text(
        (GRAPHS / "talk.yaml").read_text().replace('store: "off"', "store: every_turn")
    )
    trace = tmp_path / "trace.jsonl"
    args = ["run", str(graph), "--jsonl", "--model", f"scripted:{SCRIPT}"]
    done = ran(
        [str(CGRAPH), *args, "--store", str(tmp_path), "--trace", str(trace)], ["hi", "again"]
    )
    assert done.returncode == 0, done.stderr
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    turns = {s["attributes"]["cgraph.turn"]: s for s in spans if s["name"] == "cgraph.turn"}
    extractions = [s for s in spans if s["name"] == "cgraph.extraction"]
    assert [s["attributes"]["cgraph.turn"] for s in extractions] == [1, 2]
    assert all(s["parent_id"] is None for s in extractions)  # the reply did not wait for it
    assert extractions[0]["attributes"]["cgraph.memories_stored"] == 0  # taken in at turn 2
    for extraction in extractions:
        (call,) = [s for s in spans if s["parent_id"] == extraction["span_id"]]
        assert call["attributes"]["cgraph.purpose"] == "extraction"
        assert extraction["start"] >= turns[extraction["attributes"]["cgraph.turn"]]["end"]
    asked = [s for s in spans if s["name"].startswith("chat ") and s not in extractions]
    purposes = [s["attributes"]["cgraph.purpose"] for s in asked]
    assert sorted(purposes) == ["extraction", "extraction", "turn", "turn"]
