"""Entering a graph: where the root or a sub-graph begins (`choose_start`), and the
`graph` state that enters a sub-graph and routes on once the sub-graph has ended.
"""

from __future__ import annotations

from cgraph.runtime.ask.choosing import decide
from cgraph.runtime.ask.exchange import engine_decision
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.routing import option_by_id, route
from cgraph.runtime.routes.exits import start_options
from cgraph.runtime.state.outcomes import Enter, Outcome, Stop
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import START, qualify


def step_graph(ctx: StepContext, graph: Graph, state: GraphState) -> Outcome:
    if ctx.view.returned:
        return route(ctx, graph, state, "graph")
    key = ctx.graphs.child_key(ctx.view.graph_key, state.graph)
    if state.enter:  # begins at a named state: no start to choose
        reason = f"the `graph` state enters at `{state.enter}`"
        chosen = (engine_decision(qualify(key, START), "start", state.enter, reason),)
        name = ctx.graphs.get(key).name
        return Enter(key, state.enter, state.enter, f"enter {name}", reason, True, chosen)
    return choose_start(ctx, key, push=True)


def choose_start(ctx: StepContext, key: str, *, push: bool) -> Outcome:
    """Where a graph begins: its start state, or the model's pick among conditional entries."""
    graph = ctx.graphs.get(key)
    here = qualify(key, START)
    if isinstance(graph.start, str):
        reason = "the graph's start state"
        chosen = (engine_decision(here, "start", graph.start, reason),)
        return Enter(key, graph.start, graph.start, f"start of {graph.name}", reason, push, chosen)
    options = start_options(graph.start)
    if len({o.target for o in options}) == 1:
        reason = "every entry leads to the same state"
        first = options[0]
        chosen = (engine_decision(here, "start", first.id, reason),)
        return Enter(key, first.target, first.id, first.description, reason, push, chosen)
    known, failures = ctx.memory.metadata()
    question = ctx.requests.question(
        ctx.view, "start", graph=graph, state_id=here, state=None, options=options, extra=known
    )
    asked = decide(ctx.chooser, question)
    effects = (*failures, *asked.effects)
    if asked.choice is None:
        return Stop(None, "the model could not choose where to start", effects=effects)
    option = option_by_id(options, asked.choice.exit)
    reason = str(asked.choice.reason)
    return Enter(key, option.target, option.id, option.description, reason, push, effects)
