"""Labelled decisions: a message at a state and the exit (or `stay`) it should take, put to
a chooser exactly as a session would put it.

A labels file is a YAML list of groups, each a graph, a state and its cases (`message`,
`expect`, and optionally `before`, `entered`, `annotations`, `kind`). Each case becomes the
request the engine itself would send: a `View` of a new session at the case's state (the
slots at their defaults), a transcript of the case's earlier user messages, the question
built by the handlers' own function (`cgraph.runtime.ask.questions.action_ask`: the
slots, the ones the state collects and still misses, whether it may clarify) and the
prompt rendered by `cgraph.runtime.ask.requests.Prompter`. So the offline chooser and any
language model answer exactly what a session asks (`bench/bench_decisions.py` measures either).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from cgraph.runtime.ask.questions import Ask, action_ask
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.ports import ExitOption, LLMRequest, Question, RequestKind
from cgraph.runtime.routes.exits import (
    exit_options,
    global_exits,
    holds,
    options_with_globals,
    with_costs,
)
from cgraph.runtime.routes.failures import StepRenderFailed
from cgraph.runtime.routes.slots import slot_defaults
from cgraph.runtime.state.view import View, template_context
from cgraph.spec.load import load_graph
from cgraph.spec.model import ActionState, AnyState, Graph


@dataclass(frozen=True)
class Case:
    graph: str
    state: str
    message: str
    expect: str
    folder: Path
    """Where `graph` lies."""
    before: tuple[str, ...] = ()
    entered: bool = False
    annotations: tuple[str, ...] = ()
    label: str = ""
    """The labelled kind of message (opening, negated, hedge...), where the set has one."""
    global_exits: bool = False
    """Offer an action state the graph's global exits, as a session does."""

    @property
    def opening(self) -> bool:
        """The conversation's first message, at the start state."""
        return self.label == "opening"

    @property
    def kind(self) -> str:
        return "stay" if self.expect == "stay" else "exit"


def load_cases(path: Path, graphs: Path, global_exits: bool | None = None) -> list[Case]:
    """The cases of a labels file; each graph lies in `graphs/` next to it, else in
    `graphs`. `global_exits` offers them as a session does; by default only on the graphs
    next to the file (sets written on the shared `graphs` were calibrated without them)."""
    cases = []
    for group in yaml.safe_load(path.read_text(encoding="utf-8")):
        local = path.parent / "graphs"
        folder = local if (local / group["graph"]).is_file() else graphs
        offered = folder != graphs if global_exits is None else global_exits
        cases += [_case(group, item, folder, offered) for item in group["cases"]]
    return cases


def _case(group: dict[str, Any], item: dict[str, Any], folder: Path, offered: bool) -> Case:
    return Case(
        graph=group["graph"],
        state=group["state"],
        message=item["message"],
        expect=item["expect"],
        before=tuple(item.get("before", ())),
        entered=bool(item.get("entered", False)),
        annotations=tuple(item.get("annotations", ())),
        label=str(item.get("kind", "")),
        folder=folder,
        global_exits=offered,
    )


def graph_of(case: Case) -> Graph:
    return _graph(case.folder / case.graph)


@cache  # a set asks thousands of cases of a few graphs
def _graph(path: Path) -> Graph:
    return load_graph(path)


def request_for(case: Case) -> LLMRequest:
    """The request a session at `case.state` sends after `case.message`."""
    graph = graph_of(case)
    state = graph.states[case.state]
    view = View(
        session_id="labelled",
        user_id="labelled",
        graph_key="",
        state_id=case.state,
        here=case.state,
        returned=False,
        turn=len(case.before) + 1,
        step=0,
        message=case.message,
        # A new session's variables: the slots at their defaults, then the graph's own.
        variables={**slot_defaults(graph), **graph.variables},
        notes=(),
        annotations=case.annotations,
        memories=(),
        # An opening message enters the start state, as in a live session.
        entered=case.entered or case.opening,
        opening=case.opening,
        reflections=0,
    )
    transcript = [{"role": "user", "content": text} for text in (*case.before, case.message)]
    kind: RequestKind = "action" if state.type == "action" else "decision"
    options = _options(graph, state, view) if case.global_exits else exit_options(state)
    prompter = Prompter(graph, transcript)
    # The question a session asks (slots, collect, missing, clarify), built as it does.
    ask = action_ask(view, graph, state, options) if isinstance(state, ActionState) else None

    def build(asked: AnyState) -> LLMRequest:
        return prompter.build(
            view,
            kind,
            graph=graph,
            state_id=case.state,
            state=asked,
            ask=ask or Ask(options=options),
        )

    try:
        return build(state)
    except StepRenderFailed:
        # A `say:` that reads what earlier steps set ("{{ file.name }}") fails on the bare
        # variables of a labelled case; the exit is what is measured, not the reply.
        return build(replace(state, say=None))


def question_for(case: Case) -> Question:
    """The question a session at `case.state` asks its chooser after `case.message`: the
    structured half of `request_for`'s request."""
    request = request_for(case)
    options = with_costs(graph_of(case), request.options)
    return replace(request.asked, options=options)


def _options(graph: Graph, state: AnyState, view: View) -> tuple[ExitOption, ...]:
    """The state's exits; an action state is offered the graph's global exits first, as in
    a session (`cgraph.runtime.handlers.action.step_action`)."""
    if state.type != "action" or not graph.global_exits:
        return exit_options(state)
    context = template_context(view, graph, view.state_id)
    offered = list(global_exits([("", graph, view.state_id)], context))
    own = [e for e in state.exit_conditions if e.description and holds(e, context)]
    return options_with_globals(offered, own)[0]
