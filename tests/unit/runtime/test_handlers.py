"""Each state type's step, driven through a session by a scripted model."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.silent import step_annotation, step_side_effect
from cgraph.runtime.needs import drive
from cgraph.runtime.state.outcomes import AddTags, Emit, Move, SetVariables
from cgraph.runtime.state.view import template_context
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.session import Session
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph
from tests.conftest import FIXTURES
from tests.unit.runtime._runtime import (
    RECALL,
    FakeMemory,
    action,
    go,
    graph,
    pick,
    simple,
    stay,
    write,
)

TOOLS = FIXTURES / "runtime"


def test_decision_sees_the_authored_topology_and_chooses(tmp_path: Path) -> None:
    text = (
        simple(
            start="d",
            body="""\
  d:
    type: decision
    objective: Route the user.
    decision_guidelines: [Prefer x.]
    exit_conditions:
      - {description: Route to x., next_state: x}
      - {description: Route to y., next_state: y}
"""
            + action("x", {"END": "done"})
            + action("y", {"END": "done"}),
        )
        + "topology: |\n  [D] d -> [A] x\n  MAP-MARKER\n"
    )
    model = ScriptedModel({"d": [pick("y", "y fits")], "y": [stay("in y")]})
    turn = Session.start(graph(tmp_path, text), model=model).send("hello")
    assert (turn.state, turn.path, turn.llm_calls) == ("y", ("d", "y"), 2)
    decision = model.requests_for("d")[0]
    assert decision.kind == "decision" and "MAP-MARKER" in decision.messages[0]["content"]
    model.assert_exit_enum("d", ["x", "y"])
    assert turn.decisions[1].reason == "y fits" and turn.decisions[1].prompt_hash


def test_decision_without_authored_topology_gets_a_derived_map(tmp_path: Path) -> None:
    text = simple(
        start="d",
        body="""\
  d:
    type: decision
    objective: Route.
    exit_conditions:
      - {description: To x., next_state: x}
      - {description: To y., next_state: y}
"""
        + action("x", {"END": "done"})
        + action("y", {"END": "done"}),
    )
    model = ScriptedModel({"d": [pick("x")], "x": [stay("in x")]})
    Session.start(graph(tmp_path, text), model=model).send("hello")
    system = model.requests_for("d")[0].messages[0]["content"]
    assert "d" in system and "x" in system and "->" in system


def test_reflection_writes_an_internal_note_never_shown(tmp_path: Path) -> None:
    text = simple(
        start="r",
        body="""\
  r:
    type: reflection
    objective: Think it over.
    next_state: a
"""
        + action("a", {"END": "done"}),
    )
    model = ScriptedModel(
        {
            "r": [{"note": "SECRET-NOTE", "exit": "a", "reason": "ok"}],
            "a": [stay("visible"), stay("again")],
        }
    )
    session = Session.start(graph(tmp_path, text), model=model)
    turn = session.send("hello")
    assert session.view.notes == ("SECRET-NOTE",) and "SECRET-NOTE" not in turn.reply
    assert all("SECRET-NOTE" not in m["content"] for m in session.transcript)
    session.send("more")
    assert "SECRET-NOTE" in model.requests[-1].messages[-1]["content"]  # kept in context
    assert [e.data["note"] for e in session.events() if e.kind == "note"] == ["SECRET-NOTE"]


def test_recall_renders_queries_and_records_memories_with_scores(tmp_path: Path) -> None:
    memory = FakeMemory(["likes tea", "has a dog", "third"])
    model = ScriptedModel({"a": [stay("hi")]})
    session = Session.start(graph(tmp_path, RECALL), model=model, memory=memory, user_id="ann")
    turn = session.send("pets")
    assert memory.queries == [("ann", ["about pets", "fixed query"], ("personal",))]
    assert [(m.text, m.score) for m in turn.recalled] == [("likes tea", 0.9), ("has a dog", 0.8)]
    assert "likes tea" in model.requests[0].messages[-1]["content"]
    assert turn.llm_calls == 1  # the recall state itself costs no call


ANNOTATE = simple(
    start="n",
    body="""\
  n:
    type: annotation
    objective: Tag.
    annotations: [flagged]
    set:
      flags: "{{ flags + ['x'] }}"
      count: "{{ count + 1 }}"
      seen: "{{ true }}"
      label: "turn {{ turn }}"
    next_state: a
"""
    + action("a", {"n": "again"}),
    top="variables: {flags: [], count: 0, seen: false}\n",
)


def test_annotation_sets_variables_keeping_python_types(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("one"), go("n"), stay("two")]})
    session = Session.start(graph(tmp_path, ANNOTATE), model=model)
    session.send("first")
    assert session.variables == {"flags": ["x"], "count": 1, "seen": True, "label": "turn 1"}
    session.send("second")
    assert session.variables["flags"] == ["x", "x"] and session.variables["count"] == 2
    assert session.view.annotations == ("flagged",)


def side_effect_graph(
    tmp_path: Path,
    tool: str,
    on_error: bool = True,
    timeout: float = 2,
    parameters: str = "",
    slots: str = "",
) -> Path:
    (tmp_path / "tools_fixture.py").write_text((TOOLS / "tools_fixture.py").read_text())
    extra = "    on_error: oops\n" if on_error else ""
    return write(
        tmp_path,
        simple(
            start="a",
            top=f"tools:\n  - {{name: t, handler: 'tools_fixture:{tool}', timeout: {timeout}"
            + (f", parameters: {parameters}" if parameters else "")
            + "}\n"
            + (f"slots:\n  {slots}\n" if slots else ""),
            body=action("a", {"s": "The user asks to look something up."})
            + f"""\
  s:
    type: side_effect
    objective: Look it up.
    tool: t
    arguments: {{query: "{{{{ message }}}}", limit: "{{{{ 1 + 1 }}}}"}}
    result: found
    next_state: done
{extra}"""
            + action("done", {"END": "bye"})
            + action("oops", {"END": "bye"}, fallback="The lookup failed, sorry."),
        ),
    )


def test_side_effect_calls_the_tool_with_rendered_arguments_and_a_key(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("s")], "done": [stay("found it")]})
    session = Session.start(side_effect_graph(tmp_path, "lookup"), model=model, session_id="S1")
    session.send("hi")
    turn = session.send("tea")
    assert turn.reply == "found it" and session.variables["found"] == {
        "query": "tea",
        "hits": 2,
        "ok": True,
    }
    calls = [e.data for e in session.events() if e.kind == "tool_call"]
    assert [c["status"] for c in calls] == ["started", "done"]
    assert calls[0]["key"] == calls[1]["key"] and calls[0]["key"].startswith("S1:2:")


@pytest.mark.parametrize("tool", ["broken", "slow"])
def test_a_failing_or_slow_tool_takes_on_error(tmp_path: Path, tool: str) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("s")], "oops": [stay("could not")]})
    path = side_effect_graph(tmp_path, tool, timeout=0.2)
    session = Session.start(path, model=model)
    session.send("hi")
    turn = session.send("tea")
    assert turn.state == "oops" and turn.transitions[-1].exit_id == "on_error"
    failed = [
        e.data for e in session.events() if e.kind == "tool_call" and e.data["status"] == "failed"
    ]
    assert failed and ("down" in failed[0]["error"] or "timed out" in failed[0]["error"])


def test_a_result_its_slot_refuses_fails_the_call_and_is_never_kept(tmp_path: Path) -> None:
    # `lookup` answers a mapping; `found` is a text slot
    path = side_effect_graph(tmp_path, "lookup", slots="found: {type: string}")
    model = ScriptedModel({"a": [stay("hi"), go("s")], "oops": [stay("could not")]})
    session = Session.start(path, model=model)
    session.send("hi")
    turn = session.send("tea")
    assert turn.state == "oops" and session.variables.get("found") is None
    failed = [e.data for e in session.events() if e.kind == "tool_call"][-1]
    assert failed["status"] == "failed" and "slot `found`" in failed["error"]
    assert "is not text" in failed["error"], failed["error"]


def test_side_effect_arguments_are_validated_against_the_parameters(tmp_path: Path) -> None:
    # `query` renders from the user's words; the tool wants an integer there.
    parameters = "{type: object, properties: {query: {type: integer}, limit: {type: integer}}}"
    path = side_effect_graph(tmp_path, "lookup", parameters=parameters)
    model = ScriptedModel({"a": [stay("hi"), go("s")], "oops": [stay("could not")]})
    session = Session.start(path, model=model)
    session.send("hi")
    turn = session.send("tea")
    assert turn.state == "oops"
    calls = [e.data for e in session.events() if e.kind == "tool_call"]
    assert [c["status"] for c in calls] == ["failed"]  # never started: the handler never ran
    assert "`query`: 'tea' is not of type 'integer'" in calls[0]["error"]


def test_a_failing_tool_without_on_error_stops_with_the_fallback(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("s")]})
    session = Session.start(side_effect_graph(tmp_path, "broken", on_error=False), model=model)
    session.send("hi")
    turn = session.send("tea")
    assert turn.state == "a" and turn.fallback and turn.reply == session.graph.fallback


def test_sub_graph_enter_and_return_with_qualified_ids(tmp_path: Path) -> None:
    write(
        tmp_path,
        simple(name="child", start="ask", body=action("ask", {"END": "The question is answered."})),
        "flows/child.yaml",
    )
    text = simple(
        start="a",
        body=action("a", {"g": "The user has a question."})
        + """\
  g:
    type: graph
    objective: Answer a question.
    graph: flows/child.yaml
    exit_conditions:
      - {description: The user is satisfied., next_state: end}
      - {description: The user wants more., next_state: a}
"""
        + action("end", {"END": "bye"}),
    )
    model = ScriptedModel(
        {
            "a": [stay("hi"), go("g")],
            "flows/child.yaml#ask": [stay("what is it?"), go("END", "answered")],
            "g": [pick("end", "satisfied")],
            "end": [stay("bye then")],
        }
    )
    session = Session.start(graph(tmp_path, text), model=model)
    session.send("hi")
    turn = session.send("I have a question")
    assert turn.state == "flows/child.yaml#ask" and session.state == "flows/child.yaml#ask"
    assert turn.path == ("a", "g", "flows/child.yaml#ask")
    turn = session.send("thanks, that's it")
    assert turn.path == ("flows/child.yaml#ask", "g", "end") and turn.reply == "bye then"
    assert [t.exit_id for t in turn.transitions] == ["END", "end"]
    assert model.requests_for("g")[0].kind == "graph"


def test_conditional_start_is_a_decision_that_knows_about_memories(tmp_path: Path) -> None:
    text = simple(
        start="\n  - {when: new user, state: a}\n  - {when: returning user, state: b}",
        body=action("a", {"END": "x"}) + action("b", {"END": "x"}),
        top="memory: {store: off}\n",
    )
    model = ScriptedModel({"start": [pick("b", "known user")], "b": [stay("welcome back")]})
    session = Session.start(graph(tmp_path, text), model=model, memory=FakeMemory(["a fact"]))
    assert session.state == "START"
    turn = session.send("hello")
    assert turn.state == "b" and turn.llm_calls == 2
    start = model.requests[0]
    assert start.kind == "start" and start.has_memories is True
    assert [o.description for o in start.options] == ["new user", "returning user"]
    assert "This user is known: 1 memories" in start.messages[-1]["content"]


def context_at(
    spec: Graph, state: str, model: ScriptedModel, intents: list[Emit] | None = None, **view: object
) -> StepContext:
    """A step's context built by hand: no engine, no session, no store."""
    from cgraph.runtime.ask.choosing import ModelChooser
    from cgraph.runtime.ask.requests import Prompter
    from cgraph.runtime.memory.gateway import MemoryGateway
    from cgraph.runtime.ports import NullMemory
    from cgraph.runtime.routes.graphs import Graphs
    from tests.unit.runtime.test_prompting import view as make_view

    seen = make_view(state_id=state, here=state, **view)
    memory = MemoryGateway(NullMemory(), spec.memory, user_id="ann", session_id="s1")
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    recorded = intents if intents is not None else []
    journal = SimpleNamespace(write_ahead=recorded.append)
    chooser = ModelChooser(model)
    tools = ToolRunner()
    here = spec.states.get(state)
    return StepContext(
        seen, spec, here, Graphs(spec), prompter, chooser, True, memory, journal, tools
    )


def test_a_handler_returns_its_effects_and_changes_nothing(tmp_path: Path) -> None:
    spec = graph(tmp_path, ANNOTATE)
    ctx = context_at(spec, "n", ScriptedModel({}), variables={"flags": [], "count": 0})
    outcome = drive(step_annotation(ctx, spec, spec.states["n"]))  # type: ignore[arg-type]
    assert isinstance(outcome, Move) and outcome.target == "a"
    tags, values, chosen = outcome.effects
    assert tags == AddTags(("flagged",))
    assert isinstance(values, SetVariables) and values.values["count"] == 1
    assert isinstance(chosen, Emit) and chosen.kind == "decision"
    assert ctx.view.variables == {"flags": [], "count": 0}  # the view is not changed


def test_a_frame_builds_its_template_context_once_per_view_and_only_when_read(
    tmp_path: Path,
) -> None:
    spec = graph(tmp_path, ANNOTATE)
    ctx = context_at(spec, "n", ScriptedModel({}), variables={"flags": [], "count": 0})
    assert ctx._seen == {}  # a step that renders nothing builds none
    drive(step_annotation(ctx, spec, spec.states["n"]))  # type: ignore[arg-type]
    built = ctx.templates()
    assert list(ctx._seen) == ["n"] and ctx.templates() is built  # once, for the step's renders
    assert built == template_context(ctx.view, spec, "n")
    changed = ctx.seeing(variables={"flags": [], "count": 1})
    assert changed.templates()["count"] == 1 and ctx.templates()["count"] == 0


def test_a_tool_call_records_its_intent_before_it_runs(tmp_path: Path) -> None:
    spec = load_graph(side_effect_graph(tmp_path, "lookup"))
    started: list[Emit] = []
    ctx = context_at(spec, "s", ScriptedModel({}), started, turn=3, step=2)
    outcome = drive(step_side_effect(ctx, spec, spec.states["s"]))  # type: ignore[arg-type]
    assert [e.data["status"] for e in started] == ["started"]
    assert started[0].data["key"] == "s1:3:2"
    done = [e for e in outcome.effects if isinstance(e, Emit) and e.kind == "tool_call"]
    assert [e.data["status"] for e in done] == ["done"]
