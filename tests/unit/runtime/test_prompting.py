"""Building a request needs no engine: a view, a transcript and the graph."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.ask.choosing import ModelChooser, decide
from cgraph.runtime.ask.prompts import TEMPLATES
from cgraph.runtime.ask.questions import Ask, Posed
from cgraph.runtime.ask.requests import TEXT_FIELDS, Prompter
from cgraph.runtime.needs import drive
from cgraph.runtime.ports import Choice, LLMRequest, Question, Reason
from cgraph.runtime.routes.exits import exit_options
from cgraph.runtime.state.snapshot import HistoryMarks
from cgraph.runtime.state.view import View
from cgraph.spec.load import load_graph
from tests.unit.runtime._runtime import action, graph, simple, two_actions
from tests.unit.runtime.tools.test_calls import tool_graph


def view(**changes: object) -> View:
    values: dict[str, object] = dict(session_id="s1", user_id="ann", graph_key="", state_id="a")
    values |= dict(here="a", returned=False, turn=1, step=0, message="hello", variables={})
    values |= dict(notes=(), annotations=(), memories=(), entered=False, opening=True)
    return View(**{**values, "reflections": 0, **changes})  # type: ignore[arg-type]


def test_the_prompt_text_fields_are_what_the_shipped_templates_read() -> None:
    read = set()
    for template in TEMPLATES.glob("*.j2"):
        read |= set(re.findall(r"state\.([a-z_]+)", template.read_text(encoding="utf-8")))
    assert set(TEXT_FIELDS) == read - {"objective"}


def test_a_request_is_built_from_a_view_alone(tmp_path: Path) -> None:
    spec = two_actions(tmp_path)
    state = spec.states["a"]
    transcript = [{"role": "user", "content": "hello"}]
    prompter = Prompter(spec, transcript)
    options = exit_options(state)
    request = prompter.build(
        view(),
        "action",
        graph=spec,
        state_id="a",
        state=state,
        ask=Ask(options=options, allow_stay=True),
    )
    assert request.exit_ids == ("b", "END", "stay")
    assert request.user_messages == ("hello",) and request.messages[1]["content"] == "hello"
    assert "Objective of a." in request.messages[0]["content"]
    again = prompter.build(
        view(),
        "action",
        graph=spec,
        state_id="a",
        state=state,
        ask=Ask(options=options, allow_stay=True),
    )
    assert again.messages[0]["content"] == request.messages[0]["content"]
    assert len(prompter.cache) == 1  # the system part was rendered once


def test_the_system_part_lists_the_exits_offered_now(tmp_path: Path) -> None:
    # A `when:` or a global exit changes the offered exits within one state: the cached
    # system part must not keep listing the exits of an earlier step.
    spec = two_actions(tmp_path)
    state = spec.states["a"]
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    both = exit_options(state)
    first = prompter.build(
        view(), "action", graph=spec, state_id="a", state=state, ask=Ask(options=both)
    )
    fewer = prompter.build(
        view(), "action", graph=spec, state_id="a", state=state, ask=Ask(options=both[:1])
    )
    assert "`END`" in first.messages[0]["content"]
    assert "`END`" not in fewer.messages[0]["content"]


def test_the_history_window_moves_only_forward_and_restarts_after_an_undo(
    tmp_path: Path,
) -> None:
    spec = two_actions(tmp_path)
    transcript = [{"role": "user", "content": "word " * 400} for _ in range(20)]
    prompter = Prompter(spec, transcript)
    window, start = prompter.history(HistoryMarks())
    assert start > 0 and window == transcript[start:]
    transcript[:] = transcript[:2]
    prompter.restart()
    assert prompter.history(HistoryMarks()) == (transcript, 0)


def test_texts_that_read_variables_are_rendered_at_every_request(tmp_path: Path) -> None:
    # Texts without a template are rendered once per state; one that reads a variable
    # must show its value now, not the value of the first request.
    body = action("a", {"END": "The user says goodbye."}, say="Hi {{ name }}.")
    body = body.replace("Objective of a.", "Greet {{ name }}.")
    spec = graph(tmp_path, simple(body=body, top="variables: {name: Ann}\n"))
    state = spec.states["a"]
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    options = exit_options(state)
    for name in ("Ann", "Bob"):
        request = prompter.build(
            view(variables={"name": name}),
            "action",
            graph=spec,
            state_id="a",
            state=state,
            ask=Ask(options=options, allow_stay=True),
        )
        assert (
            request.asked.objective == f"Greet {name}."
            and request.asked.authored_reply == f"Hi {name}."
        )
        assert f"Objective: Greet {name}." in request.messages[0]["content"]


def test_a_state_s_fixed_texts_are_its_own_in_every_kind_of_request(tmp_path: Path) -> None:
    spec = two_actions(tmp_path)
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    for state_id in ("a", "b", "a"):
        state = spec.states[state_id]
        asked = prompter.build(
            view(), "action", graph=spec, state_id=state_id, state=state, ask=Ask(allow_stay=True)
        )
        extract = prompter.build(view(), "extract", graph=spec, state_id=state_id, state=state)
        assert asked.asked.objective == f"Objective of {state_id}."
        said = "Welcome to b." if state_id == "b" else "Do the work of a."
        assert asked.asked.authored_reply == said
        assert extract.asked.objective == "" and extract.asked.authored_reply == ""


def test_staying_is_described_by_the_states_objective_actions_and_guidelines(
    tmp_path: Path,
) -> None:
    # The offline chooser weighs a question against these: "Questions about the parking
    # price stay here." keeps "how much is parking?" in the state.
    spec = two_actions(tmp_path)
    guidelines = ("Questions about the parking price stay here.",)
    state = replace(spec.states["a"], intra_state_navigation_guidelines=guidelines)
    request = Prompter(spec, [{"role": "user", "content": "hello"}]).build(
        view(),
        "action",
        graph=spec,
        state_id="a",
        state=state,
        ask=Ask(options=exit_options(state)),
    )
    assert request.asked.stay_prototypes[0] == state.objective
    assert request.asked.stay_prototypes[-1] == guidelines[0]


def test_a_question_is_data_every_field_compared_and_shown() -> None:
    assert all(f.compare and f.repr for f in fields(Question))
    asked = Question("action", "a", allow_stay=True, tools=("count_files",))
    assert asked != replace(asked, tools=()) and "count_files" in repr(asked)


class _Unrendered:
    """Prompts no chooser that reads the messages itself may ask for."""

    def request(self, posed: Posed) -> LLMRequest:
        raise AssertionError("a prompt was rendered for a chooser that reads no prompt")


class _Stays:
    name = "stays"

    def choose(self, question: Question) -> Choice:
        return Choice("stay", Reason("test"), reply=question.user_messages[-1])


def test_a_posed_question_is_rendered_only_for_a_model_chooser(tmp_path: Path) -> None:
    spec = two_actions(tmp_path)
    state = spec.states["a"]
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    ask = Ask(options=exit_options(state), allow_stay=True)
    posed = prompter.pose(view(), "action", graph=spec, state_id="a", state=state, ask=ask)
    decided = drive(decide(_Stays(), posed, _Unrendered()))
    assert decided.value is not None and decided.value.reply == "hello"
    assert drive(decide(_Stays(), posed.question)) == decided  # it reads the question alone
    assert prompter.cache == {}  # nothing was rendered
    request = prompter.request(posed)
    assert request.question == posed.question and len(prompter.cache) == 1
    assert request == prompter.build(
        view(), "action", graph=spec, state_id="a", state=state, ask=ask
    )
    with pytest.raises(ValueError, match="posed with its prompt"):  # a model reads a prompt
        drive(decide(ModelChooser(ScriptedModel({})), posed.question))


def test_the_tools_a_question_names_are_offered_by_its_request(tmp_path: Path) -> None:
    spec = load_graph(tool_graph(tmp_path))
    state = spec.states["a"]
    prompter = Prompter(spec, [{"role": "user", "content": "hello"}])
    ask = Ask(allow_stay=True, tools=("slow", "nowhere"))
    request = prompter.build(view(), "action", graph=spec, state_id="a", state=state, ask=ask)
    assert request.asked.tools == ("slow", "nowhere")
    assert [f["name"] for f in request.tools] == ["slow"]  # an undeclared name offers nothing
    assert request.tools[0]["parameters"] == spec.tool("slow").parameters  # type: ignore[union-attr]
