"""The labelled set of the semantic exit chooser, as engine requests (bench and tests).

Each case becomes the request the engine itself would send: a `View` of a session at the
case's state, a transcript of the case's earlier user messages, and
`cgraph.runtime.ask.requests.Prompter` renders the real prompt. So the semantic model and any
provider model (`bench_semantic.py --model NAME`) answer exactly what a session asks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.ports import ChatModel, ExitOption, LLMRequest, Question, RequestKind
from cgraph.runtime.routes.exits import (
    exit_options,
    global_exits,
    holds,
    options_with_globals,
    with_costs,
)
from cgraph.runtime.routes.failures import StepRenderFailed
from cgraph.runtime.state.view import View, template_context
from cgraph.spec.load import load_graph
from cgraph.spec.model import AnyState, Graph

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "fixtures" / "semantic_labels.yaml"
DEV = ROOT / "bench" / "data" / "dev_labels.yaml"
"""Negation, hedges and openings on the repository's graphs: tuned on, like LABELS."""
DEV2 = ROOT / "bench" / "data" / "dev2_labels.yaml"
"""Two more graphs' messages, labelled before the chooser was run on them; tuned on since."""
DEV3 = ROOT / "bench" / "data" / "dev3_labels.yaml"
"""Three more graphs' messages, labelled before the chooser was run on them."""
DEV4 = ROOT / "bench" / "data" / "dev4" / "dev4_labels.yaml"
"""Seven more graphs' messages (negations, corrections, "not leaving yet", confirmations),
written to fit the offline chooser's scorer on: development data, never held out."""
GLOBALS = ROOT / "bench" / "data" / "global_exit_labels.yaml"
"""The example graphs' global exits: taken where they should be, and not near them; asked
with global exits (as a session asks), never tuned on."""
HELDOUT = ROOT / "tests" / "fixtures" / "heldout" / "heldout_labels.yaml"
"""Written before the chooser changed and never tuned on: report it, do not fit it."""
HELDOUT2 = ROOT / "tests" / "fixtures" / "heldout2" / "heldout_labels.yaml"
"""A second held-out set in three more domains, written while the chooser was being tuned."""
HELDOUT3 = ROOT / "tests" / "fixtures" / "heldout3" / "heldout_labels.yaml"
"""A third held-out set in three more domains, written blind for the final figure: report it
once, never fit it."""
HELDOUT4 = ROOT / "tests" / "fixtures" / "heldout4" / "heldout_labels.yaml"
"""A fourth held-out set in three more domains, written blind like the third: report it, never
fit it."""
HELDOUT5 = ROOT / "tests" / "fixtures" / "heldout5" / "heldout_labels.yaml"
"""A fifth held-out set in six more domains, written blind by another author before the
scorer was fitted: report it, never fit it."""
GRAPHS = ROOT / "graphs"


@dataclass(frozen=True)
class Case:
    graph: str
    state: str
    message: str
    expect: str
    before: tuple[str, ...] = ()
    entered: bool = False
    annotations: tuple[str, ...] = ()
    label: str = ""
    """The labelled kind of message (opening, negated, hedge...), where the set has one."""
    folder: Path = GRAPHS
    """Where `graph` lies."""
    global_exits: bool = False
    """Offer an action state the graph's global exits, as a session does. Off for the sets
    on the repository's graphs, whose figures were calibrated without them."""

    @property
    def opening(self) -> bool:
        """The conversation's first message, at the start state."""
        return self.label == "opening"

    @property
    def kind(self) -> str:
        return "stay" if self.expect == "stay" else "exit"


def load_cases(path: Path = LABELS, global_exits: bool | None = None) -> list[Case]:
    """The cases of a labels file; each graph lies in `graphs/` next to it, else in the
    repository's `graphs/`. `global_exits` offers them as a session does (by default only
    on graphs outside the repository's `graphs/`, and always for the global-exit set)."""
    if global_exits is None and path.resolve() == GLOBALS.resolve():
        global_exits = True
    cases = []
    for group in yaml.safe_load(path.read_text(encoding="utf-8")):
        local = path.parent / "graphs"
        folder = local if (local / group["graph"]).is_file() else GRAPHS
        for item in group["cases"]:
            cases.append(
                Case(
                    graph=group["graph"],
                    state=group["state"],
                    message=item["message"],
                    expect=item["expect"],
                    before=tuple(item.get("before", ())),
                    entered=bool(item.get("entered", False)),
                    annotations=tuple(item.get("annotations", ())),
                    label=str(item.get("kind", "")),
                    folder=folder,
                    global_exits=folder != GRAPHS if global_exits is None else global_exits,
                )
            )
    return cases


_GRAPHS: dict[Path, Graph] = {}


def graph_of(case: Case) -> Graph:
    path = case.folder / case.graph
    if path not in _GRAPHS:
        _GRAPHS[path] = load_graph(path)
    return _GRAPHS[path]


def request_for(case: Case, model: ChatModel) -> LLMRequest:
    """The request a session at `case.state` sends after `case.message`."""
    graph = graph_of(case)
    state = graph.states[case.state]
    view = View(
        session_id="bench",
        user_id="bench",
        graph_key="",
        state_id=case.state,
        here=case.state,
        returned=False,
        turn=len(case.before) + 1,
        step=0,
        message=case.message,
        variables=dict(graph.variables),
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

    def build(asked: AnyState) -> LLMRequest:
        return prompter.build(
            view,
            kind,
            graph=graph,
            state_id=case.state,
            state=asked,
            options=options,
            allow_stay=kind == "action",
            opening=case.opening,
        )

    try:
        return build(state)
    except StepRenderFailed:
        # A `say:` that reads what earlier steps set ("{{ file.name }}") fails on the bare
        # variables of a labelled case; the exit is what is measured, not the reply.
        return build(replace(state, say=None))


def question_for(case: Case) -> Question:
    """The question a session at `case.state` asks its chooser after `case.message`: the
    structured half of `request_for`'s request (no model is needed to build it)."""
    request = request_for(case, _NO_MODEL)
    options = with_costs(graph_of(case), request.options)
    return replace(request.asked, options=options, render=None)


class _NoModel:
    name = "none"

    def complete(self, request: LLMRequest) -> str:
        raise RuntimeError("question_for asks no model")


_NO_MODEL = _NoModel()


def _options(graph: Graph, state: AnyState, view: View) -> tuple[ExitOption, ...]:
    """The state's exits; an action state is offered the graph's global exits first, as in
    a session (`cgraph.runtime.handlers.action.step_action`)."""
    if state.type != "action" or not graph.global_exits:
        return exit_options(state)
    context = template_context(view, graph, view.state_id)
    offered = list(global_exits([("", graph, view.state_id)], context))
    own = [e for e in state.exit_conditions if e.description and holds(e, context)]
    return options_with_globals(offered, own)[0]
