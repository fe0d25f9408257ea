"""Tools the model calls from an action state: validated, run, fed back, bounded, audited."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.tools.load import load_handler
from cgraph.session import Session
from tests.unit.runtime._runtime import action, simple, stay, write

TOOLS = """
import time

CALLS = []


def count_files(folder: str, idempotency_key: str = "") -> dict:
    CALLS.append(idempotency_key)
    return {"folder": folder, "count": 3}


def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "late"
"""


def tool_graph(tmp_path: Path, max_calls: int = 4) -> Path:
    (tmp_path / "agent_tools.py").write_text(textwrap.dedent(TOOLS))
    top = f"""\
limits: {{max_tool_calls: {max_calls}}}
tools:
  - name: count_files
    description: Count the files in a folder.
    handler: agent_tools:count_files
    parameters:
      type: object
      properties: {{folder: {{type: string}}}}
      required: [folder]
      additionalProperties: false
  - name: slow
    handler: agent_tools:slow
    timeout: 0.2
    parameters: {{type: object, properties: {{seconds: {{type: number}}}}}}
"""
    body = action("a", {"END": "The user says bye."}, tools="[count_files, slow]")
    return write(tmp_path, simple(start="a", top=top, body=body))


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def calls(*made: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"c{i}", **c} for i, c in enumerate(made)]}


def _tool_messages(model: ScriptedModel) -> list[dict[str, str]]:
    return [m for m in model.requests[-1].messages if m["role"] == "tool"]


def test_the_model_calls_a_tool_reads_the_result_and_answers(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [calls(call("count_files", folder="docs")), stay("3 files.")]})
    session = Session.start(tool_graph(tmp_path), model=model, session_id="S")
    turn = session.send("How many files are in docs?")
    assert turn.reply == "3 files." and not turn.fallback
    offered = [f["name"] for f in model.requests[0].tools]
    assert offered == ["count_files", "slow"]
    assert model.requests[0].tools[0]["parameters"]["required"] == ["folder"]
    [result] = _tool_messages(model)
    assert json.loads(result["content"]) == {"result": {"folder": "docs", "count": 3}}
    [made] = turn.tool_calls
    assert made["tool"] == "count_files" and made["status"] == "done"
    assert made["arguments"] == {"folder": "docs"} and made["duration"] >= 0
    keys = [e.data["key"] for e in session.events() if e.kind == "tool_call"]
    assert keys[0] == keys[1] and keys[0].startswith("S:1:")  # intent, then the outcome
    assert turn.as_json()["tool_calls"] == [dict(made)]


def test_bad_arguments_go_back_to_the_model_once_then_the_tools_are_withdrawn(
    tmp_path: Path,
) -> None:
    bad = calls(call("count_files", path="docs"))
    model = ScriptedModel({"a": [bad, bad, stay("I could not count them.")]})
    session = Session.start(tool_graph(tmp_path), model=model)
    turn = session.send("count docs")
    assert turn.reply == "I could not count them."
    assert [c["status"] for c in turn.tool_calls] == ["refused", "refused"]
    assert "'folder' is a required property" in turn.tool_calls[0]["error"]
    assert model.requests[1].tools and not model.requests[2].tools
    assert "No more tool calls" in model.requests[2].messages[-1]["content"]


def test_an_undeclared_tool_is_refused_and_the_model_answers(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [calls(call("delete_all")), stay("I cannot do that.")]})
    session = Session.start(tool_graph(tmp_path), model=model)
    turn = session.send("delete everything")
    assert turn.reply == "I cannot do that."
    [refused] = turn.tool_calls
    assert refused["status"] == "refused"
    assert refused["error"] == "there is no tool `delete_all` here; tools: count_files, slow"


def test_a_tool_that_times_out_is_reported_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [calls(call("slow", seconds=2)), stay("The tool is slow.")]})
    session = Session.start(tool_graph(tmp_path), model=model)
    turn = session.send("run the slow one")
    assert turn.reply == "The tool is slow."
    [failed] = turn.tool_calls
    assert failed["status"] == "failed" and "timed out after 0.2s" in failed["error"]
    assert "its worker was stopped" in failed["error"]  # the model's calls run in workers too
    assert "timed out" in _tool_messages(model)[0]["content"]
    assert session.deps.tools.workers() == ()  # the warm worker was the one stopped


def test_a_model_that_loops_on_tool_calls_is_bounded_per_turn(tmp_path: Path) -> None:
    again = calls(call("count_files", folder="x"))
    model = ScriptedModel({"a": [again, again, again, stay("Done counting.")]})
    session = Session.start(tool_graph(tmp_path, max_calls=2), model=model)
    turn = session.send("count forever")
    assert turn.reply == "Done counting." and len(turn.tool_calls) == 2
    assert not model.requests[2].tools  # withdrawn after two calls
    # The third call answered without tools is not an answer: re-asked, then it answers.
    assert model.unused() == {}


def test_several_calls_in_one_answer_run_and_the_budget_cuts_the_rest(tmp_path: Path) -> None:
    three = calls(*(call("count_files", folder=f) for f in ("a", "b", "c")))
    model = ScriptedModel({"a": [three, stay("Counted two.")]})
    session = Session.start(tool_graph(tmp_path, max_calls=2), model=model)
    turn = session.send("count a, b and c")
    assert [c["status"] for c in turn.tool_calls] == ["done", "done", "refused"]
    assert "limit of 2 tool calls" in turn.tool_calls[2]["error"]
    assert len(_tool_messages(model)) == 3  # every call is answered


class NoToolsModel(ScriptedModel):
    """A scripted model that calls no tools, as a model without tool calling would."""

    def __init__(self, script: dict[str, object]) -> None:
        super().__init__(script, calls_tools=False)


def test_a_model_that_calls_no_tools_is_not_offered_them_and_says_so(tmp_path: Path) -> None:
    model = NoToolsModel({"a": stay("I can only talk.")})
    session = Session.start(tool_graph(tmp_path), model=model)
    turn = session.send("count docs")
    assert turn.reply == "I can only talk." and not model.requests[0].tools
    said = "calls no tools: `count_files`, `slow`, offered here, are not called"
    assert any(said in w for w in turn.warnings), turn.warnings


def test_a_model_that_calls_no_tools_says_so_once_a_session(tmp_path: Path) -> None:
    said = "calls no tools: `count_files`, `slow`, offered here, are not called"
    model = NoToolsModel({"a": [stay("I can only talk.")] * 4})
    session = Session.start(tool_graph(tmp_path), model=model, session_id="S", store=tmp_path)
    first, second = session.send("count docs"), session.send("and src?")
    assert [w for w in first.warnings if said in w] and not second.warnings
    session.undo()
    session.undo()
    assert [w for w in session.send("count docs").warnings if said in w]  # its turn was undone
    session.close()
    resumed = Session.resume("S", store=tmp_path, model=model)
    assert resumed.send("count tests").warnings == ()


def test_the_assistant_backs_up_the_first_file_with_its_tools() -> None:
    from tests.conftest import GRAPHS

    first_file = {"tool_calls": [{"id": "l", "name": "list_files", "arguments": {}}]}
    backup = {
        "tool_calls": [{"id": "b", "name": "backup_file", "arguments": {"name": "README.md"}}]
    }

    def done(request: Any) -> dict[str, Any]:
        # The model answers from what the tools returned, as a real one would.
        results = [json.loads(m["content"]) for m in request.messages if m["role"] == "tool"]
        made = results[-1]["result"]["backup"]
        return stay(f"Done: I backed up {results[0]['result'][0]} as {made}.")

    model = ScriptedModel(
        {"supervisor": [go_to("file_tasks")], "file_tasks": [first_file, backup, done]}
    )
    session = Session.start(GRAPHS / "assistant.yaml", model=model)
    turn = session.send("create a backup of the first file")
    assert turn.path == ("supervisor", "file_tasks")
    assert turn.reply == "Done: I backed up README.md as README.md.bak."
    assert [(c["tool"], c["status"]) for c in turn.tool_calls] == [
        ("list_files", "done"),
        ("backup_file", "done"),
    ]
    assert turn.tool_calls[1]["result"] == {"backup": "README.md.bak", "bytes": 64}
    # The handlers ran in the session's tool worker: this process's module holds nothing.
    handler = load_handler("tools.assistant_tools:backup_file", GRAPHS)
    assert handler.__globals__["BACKUPS"] == {}
    assert len(session.deps.tools.workers()) == 1


def go_to(exit_id: str) -> dict[str, Any]:
    return {"exit": exit_id, "reason": "a backup was asked for", "reply": ""}


def test_a_recorded_tool_conversation_replays_with_its_calls(tmp_path: Path) -> None:
    from cgraph.backends.llm.replay import RecordingModel, ReplayModel

    cassette = tmp_path / "tools.jsonl"
    script = {"a": [calls(call("count_files", folder="docs")), stay("3 files.")]}
    recorded = RecordingModel(ScriptedModel(script), cassette)
    first = Session.start(tool_graph(tmp_path), model=recorded).send("count docs")
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [bool(entry.get("tools")) for entry in lines] == [True, True]
    again = Session.start(tool_graph(tmp_path), model=ReplayModel(str(cassette)))
    replayed = again.send("count docs")
    assert replayed.reply == first.reply == "3 files."
    strip = [{k: v for k, v in c.items() if k != "duration"} for c in first.tool_calls]
    assert [{k: v for k, v in c.items() if k != "duration"} for c in replayed.tool_calls] == strip


HANDLERS = """\
import os
from pathlib import Path

Path(os.environ["MARK_DIR"], "{name}").write_text(str(os.getpid()))


def look() -> str:
    return "{name}"
"""


def with_tool(folder: Path, file: str, module: str, start: str, body: str) -> None:
    """A graph file whose tool `look` is `module:look`, next to a module that marks its
    import with the importing process's id."""
    top = f"tools:\n  - name: look\n    handler: {module}:look\n"
    path = write(folder, simple(name=module, start=start, top=top, body=body), file)
    (path.parent / f"{module}.py").write_text(HANDLERS.format(name=module))


def test_a_session_preloads_the_tools_of_every_graph_it_may_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARK_DIR", str(tmp_path))
    # The root hands over to side.yaml, which moves across to parts/order.yaml#b; its
    # hand-over to a file that is not there fails only if the conversation goes there.
    root = write(tmp_path, simple(name="root", start="s", body=HAND_OVER))
    side = action("a", {"parts/order.yaml#b": "The user orders."}, tools="[look]")
    with_tool(tmp_path, "side.yaml", "side_tools", "a", side)
    order = action("b", {"END": "The user is done."}, tools="[look]")
    with_tool(tmp_path, "parts/order.yaml", "order_tools", "b", order)
    session = Session.start(root, model=ScriptedModel({}))
    marks = [tmp_path / "side_tools", tmp_path / "order_tools"]
    deadline = time.monotonic() + 60
    while not all(m.exists() and m.read_text() for m in marks) and time.monotonic() < deadline:
        time.sleep(0.02)
    [worker] = session.deps.tools.workers()
    assert [m.read_text() if m.exists() else None for m in marks] == [str(worker)] * 2
    session.close()


HAND_OVER = """\
  s:
    type: graph
    objective: Run the side flow.
    graph: side.yaml
    next_state: END
  t:
    type: graph
    objective: Run a flow not written yet.
    graph: nowhere.yaml
    next_state: END
"""
