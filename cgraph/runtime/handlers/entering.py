"""Entering a graph: where the root or a sub-graph begins (`choose_start`), and the
`graph` state that enters a sub-graph and routes on once the sub-graph has ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cgraph.errors import SlotValueError
from cgraph.runtime.ask.choosing import decide
from cgraph.runtime.ask.exchange import engine_decision
from cgraph.runtime.ask.questions import Ask
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.routing import option_by_id, route
from cgraph.runtime.needs import Steps
from cgraph.runtime.routes.exits import start_options
from cgraph.runtime.routes.failures import StepRenderFailed, rendered
from cgraph.runtime.routes.slots import frame_defaults, set_slots
from cgraph.runtime.state.outcomes import Enter, Outcome, Stop
from cgraph.runtime.state.snapshot import jsonable
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import START, qualify
from cgraph.spec.templating import render_value


def step_graph(ctx: StepContext, graph: Graph, state: GraphState) -> Steps[Outcome]:
    if ctx.view.returned:
        return (yield from route(ctx, graph, state, "graph"))
    key = ctx.graphs.child_key(ctx.view.graph_key, state.graph)
    inner = ctx.graphs.get(key)
    slots = {**frame_defaults(inner), **_passed(ctx, graph, state, inner)}
    if state.enter:  # begins at a named state: no start to choose
        reason = f"the `graph` state enters at `{state.enter}`"
        chosen = (engine_decision(qualify(key, START), "start", state.enter, reason),)
        entering = f"enter {inner.name}"
        return Enter(key, state.enter, state.enter, entering, reason, True, chosen, slots)
    return (yield from choose_start(ctx, key, push=True, slots=slots))


def _passed(ctx: StepContext, graph: Graph, state: GraphState, inner: Graph) -> dict[str, Any]:
    """What a `graph` state passes in (`with:`), rendered in its own graph and checked
    against the sub-graph's slots; a failing render fails the step (field `with`)."""
    if not state.with_:
        return {}
    context = ctx.templates()
    here = ctx.view.here
    values = rendered(
        here, "with", lambda: {k: render_value(v, context) for k, v in state.with_.items()}
    )
    try:
        state_id, found = ctx.view.state_id, jsonable(values)
        return set_slots(graph, state_id, found, declared=inner, field="with")
    except SlotValueError as err:
        raise StepRenderFailed(here, f"with.{err.slot}", err) from err


def choose_start(
    ctx: StepContext, key: str, *, push: bool, slots: Mapping[str, Any] | None = None
) -> Steps[Outcome]:
    """Where a graph begins: its start state, or the model's pick among conditional entries
    (a sub-graph's with its own `slots`)."""
    graph = ctx.graphs.get(key)
    here = qualify(key, START)
    own = dict(slots or {})
    if isinstance(graph.start, str):
        reason = "the graph's start state"
        chosen = (engine_decision(here, "start", graph.start, reason),)
        starting = f"start of {graph.name}"
        return Enter(key, graph.start, graph.start, starting, reason, push, chosen, own)
    options = start_options(graph.start)
    if len({o.target for o in options}) == 1:
        reason = "every entry leads to the same state"
        first = options[0]
        chosen = (engine_decision(here, "start", first.id, reason),)
        return Enter(key, first.target, first.id, first.description, reason, push, chosen, own)
    known, failures = yield from ctx.memory.metadata()
    ask = Ask(options=options, extra=known)
    posed = ctx.requests.pose(ctx.view, "start", graph=graph, state_id=here, state=None, ask=ask)
    asked = yield from decide(ctx.chooser, posed, ctx.requests)
    effects = (*failures, *asked.effects)
    if asked.value is None:
        return Stop(None, "the model could not choose where to start", effects=effects)
    option = option_by_id(options, asked.value.exit)
    reason = str(asked.value.reason)
    return Enter(key, option.target, option.id, option.description, reason, push, effects, own)
