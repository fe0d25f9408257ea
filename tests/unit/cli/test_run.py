"""`cgraph run` without a terminal: one message per line, `--jsonl`, record and replay.

The runs go through the real `cgraph` command in a subprocess, offline (semantic mode).
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.cli.lines import run_lines
from cgraph.cli.opening import Opened
from cgraph.errors import MemoryStoreError
from cgraph.session import Sessions
from cgraph.spec.load import load_graph
from tests.commands import CGRAPH, environment, ran
from tests.conftest import GRAPHS

pytestmark = pytest.mark.slow  # real `cgraph` processes, models or Chroma


CHECKIN = GRAPHS / "medical_checkin.yaml"
HAPPY = [
    "Hi",
    "Yes, I'm ready.",
    "I took all of my medications this morning.",
    "No, I didn't need the spray.",
    "No chest pain at all.",
    "My breathing is normal.",
    "Great, thank you.",
    "No, that's all.",  # one goodbye ends it: end_session says it and takes its exit
]
HAPPY_STATES = [
    "welcome_patient",
    "medication_adherence_check",
    "vasodilator_check",
    "check_chest_pain",
    "check_shortness_of_breath",
    "summarize_recommendations_approved",
    "patient_questions",
    "end_session",
]


def cgraph(
    *args: str, lines: Sequence[str] = (), timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    env = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return ran([str(CGRAPH), *args], lines, env=env, timeout=timeout)


def turns(result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    """A whole check-in in semantic mode, every model exchange recorded."""
    folder = tmp_path_factory.mktemp("recorded")
    record = folder / "checkin.jsonl"
    result = cgraph(
        "run",
        str(CHECKIN),
        "--jsonl",
        "--store",
        str(folder / "store"),
        "--record",
        str(record),
        lines=HAPPY,
    )
    assert result.returncode == 0, result.stderr
    return record, turns(result)


def test_a_whole_checkin_reaches_end(recorded: tuple[Path, list[dict[str, object]]]) -> None:
    _, lines = recorded
    assert [t["user"] for t in lines] == HAPPY
    assert [t["state"] for t in lines] == HAPPY_STATES
    assert lines[-1]["completed"] is True and not any(t["completed"] for t in lines[:-1])
    assert lines[5]["path"] == [
        "check_shortness_of_breath",
        "recall_patient_history",
        "reflect_on_session_data",
        "determine_exercise_clearance",
        "summarize_recommendations_approved",
    ]
    assert "cleared" in str(lines[5]["reply"])
    assert {t["session"] for t in lines} == {lines[0]["session"]}
    first_move = lines[1]["transitions"][0]  # type: ignore[index]
    assert first_move["to"] == "medication_adherence_check" and first_move["reason"]
    assert set(lines[0]) == {
        "turn",
        "user",
        "reply",
        "path",
        "transitions",
        "state",
        "recalled",
        "session",
        "completed",
        "guard",
        "fallback",
        "warnings",
        "tool_calls",
        "metadata",
        "interrupted",
        "clarified",
        "choices",
    }


def test_replay_plays_the_same_session(
    recorded: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    record, original = recorded
    result = cgraph(
        "run",
        str(CHECKIN),
        "--jsonl",
        "--store",
        str(tmp_path),
        "--model",
        f"replay:{record}",
        lines=HAPPY,
    )
    assert result.returncode == 0, result.stderr
    replayed = turns(result)
    strip = [{k: v for k, v in t.items() if k != "session"} for t in original]
    assert [{k: v for k, v in t.items() if k != "session"} for t in replayed] == strip


def test_a_mismatching_replay_fails_loudly(
    recorded: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    record, _ = recorded
    changed = [*HAPPY[:2], "I skipped my evening pill.", *HAPPY[3:]]
    result = cgraph(
        "run",
        str(CHECKIN),
        "--jsonl",
        "--store",
        str(tmp_path),
        "--model",
        f"replay:{record}",
        lines=changed,
    )
    assert result.returncode == 1
    assert "does not match the recording" in result.stderr
    # An offline run's recording keeps the question each choice answered: its messages.
    assert '+    "I skipped my evening pill."' in result.stderr
    assert len(turns(result)) == 2  # nothing printed after the mismatch


def test_lint_errors_are_located_and_stop_the_run(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    text = CHECKIN.read_text().replace("next_state: vasodilator_check", "next_state: vasodilatr")
    broken.write_text(text)
    result = cgraph("run", str(broken), "--store", str(tmp_path / "s"), lines=["hi"])
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{broken}:" in result.stderr and "vasodilatr" in result.stderr


class BrokenMemory:
    """A memory store whose every call fails, as a dead Chroma server's does."""

    ready = True

    def __init__(self, note: str = "") -> None:
        self.note = note

    def _fail(self, *_: object, **__: object) -> Any:
        raise MemoryStoreError("memory recall failed: no Chroma server answers")

    recall = add = list = delete = count = _fail


def test_memory_failures_are_warned_per_turn_and_the_run_goes_on(tmp_path: Path) -> None:
    graph = load_graph(CHECKIN)
    memory = BrokenMemory(note="memory is off: no Chroma server answers at 127.0.0.1:9")
    chat = ScriptedModel({"*": {"exit": "stay", "reason": "r", "reply": "Hello"}})
    sessions = Sessions(tmp_path, model=chat, memory=memory, remember="background")
    opened = Opened(
        graph=graph,
        session=sessions.start(graph, user_id="ann"),
        opener=sessions,
        model_name="scripted",
        memory=cast(Any, memory),
        store=tmp_path,
        user="ann",
    )
    out, err = io.StringIO(), io.StringIO()
    assert run_lines(opened, io.StringIO("Hi\nHello again\n"), out, err, jsonl=False) == 0
    assert out.getvalue().splitlines() == ["Hello", "Hello"]
    warnings = [line for line in err.getvalue().splitlines() if line.startswith("warning:")]
    assert warnings.count(f"warning: {memory.note} (the conversation goes on)") == 1
    recall_failed = [w for w in warnings if w.startswith("warning: memory recall failed")]
    assert len(recall_failed) == 2, err.getvalue()  # one per turn: welcome_patient recalls


def test_a_store_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("not a folder")
    result = cgraph("run", str(CHECKIN), "--store", str(taken), lines=["hi"])
    assert result.returncode == 1
    assert (
        result.stderr.strip() == f"error: --store {taken}: cannot use it as a folder (File exists)"
    )


def test_an_unknown_provider_fails_before_the_first_turn(tmp_path: Path) -> None:
    result = cgraph(
        "run", str(CHECKIN), "--model", "nosuchprovider/x", "--store", str(tmp_path), lines=["hi"]
    )
    assert result.returncode == 1
    assert "error: unknown model `nosuchprovider/x`" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
