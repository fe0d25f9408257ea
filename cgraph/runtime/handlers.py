"""One step per state type: each handler looks at a state and says what happens next.

A handler is a function of a `StepContext` (`cgraph.runtime.context`), the graph and the
state. It never changes the session: it returns an outcome (`cgraph.runtime.outcomes`)
with the step's effects, and the engine checks and applies it. The one write a handler
makes is a tool call's intent, committed before the call (see `_call`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cgraph.backends.llm.types import STAY, ExitOption, RequestKind
from cgraph.errors import CgraphError, SlotValueError, ToolError
from cgraph.runtime.asking import Asked, ask, engine_decision
from cgraph.runtime.context import StepContext, template_context
from cgraph.runtime.exits import ON_ERROR, exit_options, start_options, state_exits
from cgraph.runtime.flows import (
    first_holding,
    global_exits,
    holds,
    options_with_globals,
    set_slots,
    slot_changes,
    slot_schemas,
    unfilled,
)
from cgraph.runtime.outcomes import (
    AddNote,
    AddTags,
    CountReflection,
    Effects,
    Emit,
    Enter,
    MarkUserFacing,
    Move,
    Outcome,
    Reply,
    Say,
    SetVariables,
    Stop,
    decided,
)
from cgraph.runtime.render_failures import StepRenderFailed, fallback, rendered
from cgraph.runtime.snapshot import jsonable
from cgraph.runtime.toolcalls import Calling, ask_with_tools, offered
from cgraph.runtime.tools import call_tool, check_arguments, load_handler
from cgraph.spec.limits import check_size
from cgraph.spec.model import (
    ActionState,
    AnnotationState,
    AnyState,
    DecisionState,
    Graph,
    GraphState,
    RecallState,
    ReflectionState,
    SideEffectState,
)
from cgraph.spec.names import START, qualify
from cgraph.spec.templating import is_template, render_text, render_value


def _move(option: ExitOption, reason: str, effects: Effects, reply: str = "") -> Move:
    return Move(option.id, option.target, option.description, reason, reply, effects)


def _chosen(options: tuple[ExitOption, ...], exit_id: str) -> ExitOption:
    return next(o for o in options if o.id == exit_id)


def _ask(ctx: StepContext, kind: RequestKind, graph: Graph, state: AnyState, **more: Any) -> Asked:
    request = ctx.requests.build(
        ctx.view, kind, graph=graph, state_id=ctx.view.here, state=state, **more
    )
    return ask(ctx.model, request)


def route(
    ctx: StepContext,
    graph: Graph,
    state: AnyState,
    kind: RequestKind = "decision",
    before: Effects = (),
) -> Outcome:
    """Leave a silent state: the first `when` exit that holds, its single way out, or the
    model's choice among the described exits whose `when` holds."""
    known = state_exits(state)
    exits, options = known.exits, known.options
    # Built only when read (a `say:`, a `when:`): most silent steps read neither.
    reads = state.say or known.conditional
    context = template_context(ctx.view, graph, ctx.view.state_id) if reads else {}
    before = (*before, *_said(ctx.view.here, state, context))
    taken = first_holding(exits, context)
    here = ctx.view.here
    if taken is not None:
        option = options[taken[0]]
        reason = f"`when: {taken[1].when}` holds" if taken[1].when else "no `when` held (else)"
        return _move(option, reason, (*before, engine_decision(here, kind, option.id, reason)))
    open_ = tuple(
        o for o, e in zip(options, exits, strict=True) if e.description and holds(e, context)
    )
    if not open_:
        return Stop(None, f"no exit of `{here}` holds", effects=before)
    if len(open_) == 1:
        chosen = engine_decision(here, kind, open_[0].id, "the only way out")
        return _move(open_[0], "the only way out", (*before, chosen))
    asked = _ask(ctx, kind, graph, state, options=open_)
    return _routed(asked, open_, (*before, *asked.effects))


def _said(here: str, state: AnyState, context: dict[str, Any]) -> Effects:
    """A silent state's `say:` line for the turn's reply (a failing one fails the step)."""
    say = state.say
    if state.type == "action" or not say:
        return ()
    text = rendered(here, "say", lambda: render_text(say, context) if is_template(say) else say)
    text = text.strip()
    return (Say(text),) if text else ()


def _routed(asked: Asked, options: tuple[ExitOption, ...], effects: Effects) -> Outcome:
    if asked.answer is None:
        return Stop(None, "the model gave no usable answer", effects=effects)
    return _move(_chosen(options, asked.answer.exit), asked.answer.reason, effects)


def step_action(ctx: StepContext, graph: Graph, state: ActionState) -> Outcome:
    effects: Effects = (MarkUserFacing(),)
    if state.included_contexts:
        found = ctx.memory.recall(
            ctx.view.here, [ctx.view.message], state.included_contexts, graph.memory.top_k
        )
        ctx = ctx.seeing(memories=ctx.view.memories + found.memories)
        effects += found.events
    passed = _passed_through(ctx, graph, state, effects)
    if passed is not None:
        return passed
    options, owners, context = _action_options(ctx, graph, state)
    schemas, collect = slot_schemas(graph, state)
    # No user-facing state before this one: the user's first message is still unanswered.
    opening = ctx.view.opening
    if state.tools and getattr(ctx.model, "calls_tools", True):
        asked, calls = _ask_with_tools(ctx, graph, state, options, opening, schemas, collect)
        effects += calls
    else:
        asked = _ask(
            ctx,
            "action",
            graph,
            state,
            options=options,
            allow_stay=True,
            opening=opening,
            slots=schemas,
            collect=collect,
        )
        effects += _offline_tools(ctx, state)
    effects += asked.effects
    answer = asked.answer
    if answer is None:
        if context is None:
            context = template_context(ctx.view, graph, ctx.view.state_id)
        text, failed = fallback(graph, state, ctx.view.here, context)
        return Reply(text, fallback=True, effects=(*effects, *failed))
    ctx, effects = _fill(ctx, answer.slots, effects)
    if answer.exit != STAY:
        option = _chosen(options, answer.exit)
        owner = owners.get(option.id)
        return Move(
            option.id,
            option.target,
            option.description,
            answer.reason,
            answer.reply,
            effects,
            owner,
        )
    if not ctx.view.entered or not state.ask_before_filling:
        taken = _deterministic(ctx, graph, state, effects)
        if taken is not None:
            return taken
    return Reply(answer.reply, effects=effects)


def _action_options(
    ctx: StepContext, graph: Graph, state: ActionState
) -> tuple[tuple[ExitOption, ...], dict[str, str], dict[str, Any] | None]:
    """(the options offered, the global ones' owners, the template context if it was built).

    A graph without global exits and a state without `when:` offer the same options every
    step: they are built once per state, and no condition is evaluated."""
    frames = _frames(ctx)
    known = state_exits(state)
    if not known.conditional and not any(g.global_exits for _, g, _ in frames):
        return known.described, {}, None
    context = template_context(ctx.view, graph, ctx.view.state_id)
    anywhere = list(global_exits(frames, context))
    described = [e for e in state.exit_conditions if e.description and holds(e, context)]
    return (*options_with_globals(anywhere, described), context)


def _frames(ctx: StepContext) -> list[tuple[str, Graph, str]]:
    frames = ctx.view.frames or ((ctx.view.graph_key, ctx.view.state_id),)
    return [(key, ctx.graphs.get(key), state) for key, state in frames]


def _fill(ctx: StepContext, found: dict[str, Any], effects: Effects) -> tuple[StepContext, Effects]:
    """Slot values from the answer: set, and logged (a changed value as a correction)."""
    new, corrected = slot_changes(found, ctx.view.variables)
    if not new:
        return ctx, effects
    record = {"state": ctx.view.here, "values": new, "corrected": corrected}
    effects = (*effects, SetVariables(new), Emit("slots", record))
    return ctx.seeing(variables={**ctx.view.variables, **new}), effects


def _passed_through(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects
) -> Outcome | None:
    """A collect state entered with its slots already filled is passed through (no model)."""
    if not (state.collect and ctx.view.entered) or state.ask_before_filling:
        return None
    return _deterministic(ctx, graph, state, effects)


def _deterministic(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects
) -> Outcome | None:
    """The first `when` exit that holds, once the state's `collect` slots are all filled."""
    if unfilled(state.collect, ctx.view.variables) or not _any_deterministic(state):
        return None
    context = template_context(ctx.view, graph, ctx.view.state_id)
    taken = first_holding(state.exit_conditions, context)
    if taken is None:
        return None
    option = exit_options(state)[taken[0]]
    reason = f"`when: {taken[1].when}` holds" if taken[1].when else "its slots are filled"
    chosen = engine_decision(ctx.view.here, "action", option.id, reason)
    return _move(option, reason, (*effects, chosen))


def _any_deterministic(state: ActionState) -> bool:
    return any(e.description is None for e in state.exit_conditions)


def _ask_with_tools(
    ctx: StepContext,
    graph: Graph,
    state: ActionState,
    options: tuple[ExitOption, ...],
    opening: bool,
    slots: dict[str, Any],
    collect: tuple[str, ...],
) -> tuple[Asked, Effects]:
    """The action's question with the state's tools offered (see `cgraph.runtime.toolcalls`)."""
    request = ctx.requests.build(
        ctx.view,
        "action",
        graph=graph,
        state_id=ctx.view.here,
        state=state,
        options=options,
        allow_stay=True,
        opening=opening,
        slots=slots,
        collect=collect,
    )
    budget = max(ctx.root.limits.max_tool_calls - ctx.view.tool_calls, 0)
    calling = Calling(
        graph,
        ctx.graphs.folder_of(graph),
        ctx.view.here,
        ctx.view.idempotency_key,
        state.tools,
        budget,
        ctx.record_intent,
    )
    tools = offered(graph, state.tools) if budget else ()
    return ask_with_tools(ctx.model, replace(request, tools=tools), calling)


def _offline_tools(ctx: StepContext, state: ActionState) -> Effects:
    """Said once a turn in a state that offers tools to a model that calls none."""
    if not state.tools:
        return ()
    names = ", ".join(f"`{t}`" for t in state.tools)
    note = (
        f"the {getattr(ctx.model, 'name', 'offline')} model calls no tools: {names} offered "
        "here are not called (side-effect states still run their tools)"
    )
    return (Emit("tool_call", {"state": ctx.view.here, "status": "skipped", "error": note}),)


def step_decision(ctx: StepContext, graph: Graph, state: DecisionState) -> Outcome:
    return route(ctx, graph, state, "decision")


def step_reflection(ctx: StepContext, graph: Graph, state: ReflectionState) -> Outcome:
    limit = ctx.root.limits.max_reflections
    if ctx.view.reflections >= limit:
        return Stop("max_reflections", f"more than {limit} reflections in one turn")
    options = exit_options(state)
    asked = _ask(ctx, "reflection", graph, state, options=options)
    noted = (AddNote(asked.answer.note),) if asked.answer is not None else ()
    effects = (CountReflection(), *asked.failures, *noted, decided(asked.decision))
    return _routed(asked, options, effects)


def step_recall(ctx: StepContext, graph: Graph, state: RecallState) -> Outcome:
    context = template_context(ctx.view, graph, ctx.view.state_id)
    queries = rendered(
        ctx.view.here, "queries", lambda: [str(render_value(q, context)) for q in state.queries]
    )
    found = ctx.memory.recall(ctx.view.here, queries, state.tiers, state.top_k)
    ctx = ctx.seeing(memories=ctx.view.memories + found.memories)
    return route(ctx, graph, state, before=found.events)


def step_annotation(ctx: StepContext, graph: Graph, state: AnnotationState) -> Outcome:
    effects: Effects = (AddTags(state.annotations),)
    if state.set:
        context = template_context(ctx.view, graph, ctx.view.state_id)
        values = rendered(ctx.view.here, "set", lambda: _set_values(state, context))
        values = _slot_values(ctx, graph, values)
        effects += (SetVariables(values),)
        ctx = ctx.seeing(variables={**ctx.view.variables, **values})
    return route(ctx, graph, state, before=effects)


def _set_values(state: AnnotationState, context: dict[str, Any]) -> dict[str, Any]:
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


def step_side_effect(ctx: StepContext, graph: Graph, state: SideEffectState) -> Outcome:
    key = ctx.view.idempotency_key
    record = {"state": ctx.view.here, "tool": state.tool, "key": key}
    try:
        result = _call(ctx, graph, state)
        check_size(result, f"the result of tool `{state.tool}`")
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
    if state.result:
        values = jsonable({state.result: result})
        effects += (SetVariables(values),)
        ctx = ctx.seeing(variables={**ctx.view.variables, **values})
    return route(ctx, graph, state, before=effects)


def _call(ctx: StepContext, graph: Graph, state: SideEffectState) -> Any:
    tool = graph.tool(state.tool)
    if tool is None:
        raise ToolError(f"tool `{state.tool}` is not declared under `tools`")
    context = template_context(ctx.view, graph, ctx.view.state_id)
    arguments = rendered(
        ctx.view.here,
        "arguments",
        lambda: {name: _render_deep(value, context) for name, value in state.arguments.items()},
    )
    check_arguments(tool.name, tool.parameters, arguments)
    handler = load_handler(tool.handler, ctx.graphs.folder_of(graph))
    key = ctx.view.idempotency_key
    # The intent is committed before the call: a crash during the call leaves a record
    # that this key was attempted, and the resumed step calls again with the same key.
    started = {"status": "started", "arguments": arguments}
    ctx.record_intent(
        Emit("tool_call", {"state": ctx.view.here, "tool": tool.name, "key": key, **started})
    )
    return call_tool(handler, arguments, timeout=tool.timeout, idempotency_key=key, name=tool.name)


def _render_deep(value: Any, context: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _render_deep(v, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render_deep(v, context) for v in value]
    return render_value(value, context)


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
    request = ctx.requests.build(
        ctx.view, "start", graph=graph, state_id=here, state=None, options=options, extra=known
    )
    asked = ask(ctx.model, request)
    effects = (*failures, *asked.effects)
    if asked.answer is None:
        return Stop(None, "the model could not choose where to start", effects=effects)
    option = _chosen(options, asked.answer.exit)
    reason = asked.answer.reason
    return Enter(key, option.target, option.id, option.description, reason, push, effects)


StepHandler = Callable[[StepContext, Graph, Any], Outcome]
HANDLERS: dict[str, StepHandler] = {
    "action": step_action,
    "decision": step_decision,
    "reflection": step_reflection,
    "recall": step_recall,
    "annotation": step_annotation,
    "side_effect": step_side_effect,
    "graph": step_graph,
}
