"""The steps of the silent state types: decision, reflection, recall, annotation and
side effect. Each does its one thing, then leaves by `cgraph.runtime.handlers.routing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from cgraph.errors import CgraphError, SlotValueError, ToolError
from cgraph.runtime.ask.questions import Ask
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.routing import ask_state, route, routed
from cgraph.runtime.needs import Offload, Steps
from cgraph.runtime.routes.exits import ON_ERROR, exit_options
from cgraph.runtime.routes.failures import StepRenderFailed, rendered
from cgraph.runtime.routes.slots import set_slots, tool_values
from cgraph.runtime.state.outcomes import (
    AddNote,
    AddTags,
    CountReflection,
    Effects,
    Emit,
    Move,
    Outcome,
    SetVariables,
    Stop,
    decided,
)
from cgraph.runtime.state.snapshot import jsonable
from cgraph.runtime.tools.arguments import check_arguments
from cgraph.spec.limits import check_size
from cgraph.spec.model import (
    AnnotationState,
    DecisionState,
    Graph,
    RecallState,
    ReflectionState,
    SideEffectState,
)
from cgraph.spec.templating import render_value


def step_decision(ctx: StepContext, graph: Graph, state: DecisionState) -> Steps[Outcome]:
    return (yield from route(ctx, graph, state, "decision"))


def step_reflection(ctx: StepContext, graph: Graph, state: ReflectionState) -> Steps[Outcome]:
    limit = ctx.root.limits.max_reflections
    if ctx.view.reflections >= limit:
        return Stop("max_reflections", f"more than {limit} reflections in one turn")
    options = exit_options(state)
    asked = yield from ask_state(ctx, "reflection", graph, state, Ask(options=options))
    noted = (AddNote(asked.value.note),) if asked.value is not None else ()
    effects = (CountReflection(), *asked.failures, *noted, decided(asked.decision))
    return routed(asked, options, effects)


def step_recall(ctx: StepContext, graph: Graph, state: RecallState) -> Steps[Outcome]:
    # Read inside the render: a recall without queries builds no template context.
    queries = rendered(
        ctx.view.here,
        "queries",
        lambda: [str(render_value(q, ctx.templates())) for q in state.queries],
    )
    found = yield from ctx.memory.recall(ctx.view.here, queries, state.tiers, state.top_k)
    if found.memories:  # an unchanged view keeps its frame (and the context it built)
        ctx = ctx.seeing(memories=ctx.view.memories + found.memories)
    return (yield from route(ctx, graph, state, before=found.events))


def step_annotation(ctx: StepContext, graph: Graph, state: AnnotationState) -> Steps[Outcome]:
    effects: Effects = (AddTags(state.annotations),)
    if state.set:
        context = ctx.templates()
        values = rendered(ctx.view.here, "set", lambda: _set_values(state, context))
        values = _slot_values(ctx, graph, values)
        effects += (SetVariables(values),)
        ctx = ctx.seeing(variables={**ctx.view.variables, **values})
    return (yield from route(ctx, graph, state, before=effects))


def _set_values(state: AnnotationState, context: Mapping[str, Any]) -> dict[str, Any]:
    values = {name: render_value(v, context) for name, v in state.set.items()}
    for name, value in values.items():
        check_size(value, f"variable `{name}`")
    return dict(jsonable(values))


def _slot_values(ctx: StepContext, graph: Graph, values: dict[str, Any]) -> dict[str, Any]:
    """`set:` values checked against their slots; a refused one fails the step (its
    field named, `set.<slot>`), so the session never holds it."""
    try:
        return set_slots(graph, ctx.view.state_id, values)
    except SlotValueError as err:
        raise StepRenderFailed(ctx.view.here, f"set.{err.slot}", err) from err


def step_side_effect(ctx: StepContext, graph: Graph, state: SideEffectState) -> Steps[Outcome]:
    key = ctx.view.idempotency_key
    record = {"state": ctx.view.here, "tool": state.tool, "key": key}
    try:
        result = yield from _call(ctx, graph, state)
        check_size(result, f"the result of tool `{state.tool}`")
        # A `result:` that names a slot keeps only what the slot accepts: a refused value
        # fails the call (its `on_error`), so no slot ever holds what its schema refuses.
        kept = (
            set_slots(graph, ctx.view.state_id, jsonable({state.result: result}), field="result")
            if state.result
            else {}
        )
        tool = graph.tool(state.tool)
        if tool is not None and tool.sets:
            kept |= tool_values(graph, tool, jsonable(result), by_model=False)
    except StepRenderFailed:
        raise
    except CgraphError as err:
        failed = (Emit("tool_call", {**record, "status": "failed", "error": err.message}),)
        if state.on_error:
            reason = f"the tool failed: {err.message}"
            taken = "the tool failed or timed out"
            return Move(ON_ERROR, state.on_error, taken, reason, effects=failed)
        return Stop(None, f"tool `{state.tool}` failed: {err.message}", effects=failed)
    effects: Effects = (Emit("tool_call", {**record, "status": "done", "result": result}),)
    if kept:
        effects += (SetVariables(kept),)
        ctx = ctx.seeing(variables={**ctx.view.variables, **kept})
    return (yield from route(ctx, graph, state, before=effects))


def _call(ctx: StepContext, graph: Graph, state: SideEffectState) -> Steps[Any]:
    tool = graph.tool(state.tool)
    if tool is None:
        raise ToolError(f"tool `{state.tool}` is not declared under `tools`")
    context = ctx.templates()
    arguments = rendered(
        ctx.view.here,
        "arguments",
        lambda: {name: _render_deep(value, context) for name, value in state.arguments.items()},
    )
    check_arguments(tool.name, tool.parameters, arguments)
    key = ctx.view.idempotency_key
    # The intent is committed before the call: a crash during the call leaves a record
    # that this key was attempted, and the resumed step calls again with the same key.
    started = {"status": "started", "arguments": arguments}
    intent = Emit("tool_call", {"state": ctx.view.here, "tool": tool.name, "key": key, **started})
    yield Offload(partial(ctx.journal.write_ahead, intent), "store")
    folder = ctx.graphs.folder_of(graph)
    call = partial(ctx.tools.call, tool, folder, arguments, key, graph.trust)
    return (yield Offload(call, "tool"))


def _render_deep(value: Any, context: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _render_deep(v, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render_deep(v, context) for v in value]
    return render_value(value, context)
