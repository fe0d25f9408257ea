"""One step per state type: each handler looks at a state and says what happens next.

Handlers never move the session themselves; they return an outcome — `Move` (take an
exit), `Enter` (start a graph or sub-graph), `Reply` (the turn ends here) or `Stop` (a
guard or a failure ends the turn in the last user-facing state) — and the engine checks
and applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cgraph.backends.llm.types import STAY, ExitOption, RequestKind
from cgraph.errors import CgraphError, ToolError
from cgraph.runtime.asking import (
    Asked,
    ask,
    authored_reply,
    build_request,
    engine_decision,
)
from cgraph.runtime.exits import ON_ERROR, exit_options, start_options
from cgraph.runtime.tools import call_tool, check_arguments, load_handler
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
from cgraph.spec.templating import render_value

if TYPE_CHECKING:
    from cgraph.runtime.engine import Engine


@dataclass(frozen=True, slots=True)
class Move:
    exit_id: str
    target: str
    description: str
    reason: str
    reply: str = ""
    """What an action state said as it left (used if the session ends this turn)."""


@dataclass(frozen=True, slots=True)
class Enter:
    graph: str
    """The key of the graph entered ("" for the root)."""
    target: str
    exit_id: str
    description: str
    reason: str
    push: bool


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class Stop:
    guard: str | None
    """The loop guard hit, or None when a failure (model, tool) stopped the turn."""
    detail: str
    fallback: bool = True


Outcome = Move | Enter | Reply | Stop


def fallback_text(graph: Graph, state: AnyState | None) -> str:
    own = getattr(state, "fallback", None)
    return own or graph.fallback


def _move(option: ExitOption, reason: str, reply: str = "") -> Move:
    return Move(option.id, option.target, option.description, reason, reply)


def _chosen(options: tuple[ExitOption, ...], exit_id: str) -> ExitOption:
    return next(o for o in options if o.id == exit_id)


def route(engine: Engine, graph: Graph, state: AnyState, kind: RequestKind = "decision") -> Outcome:
    """Leave a silent state: its single way out, or the model's choice among several."""
    options = exit_options(state)
    here = engine.qualified()
    if len(options) == 1:
        engine.record(engine_decision(here, kind, options[0].id, "the only way out"))
        return _move(options[0], "the only way out")
    request = build_request(engine, kind, graph=graph, state_id=here, state=state, options=options)
    return _routed(engine, ask(engine, request), options)


def _routed(engine: Engine, asked: Asked, options: tuple[ExitOption, ...]) -> Outcome:
    engine.record(asked.decision)
    if asked.answer is None:
        return Stop(None, "the model gave no usable answer")
    return _move(_chosen(options, asked.answer.exit), asked.answer.reason)


def step_action(engine: Engine, graph: Graph, state: ActionState) -> Outcome:
    # No user-facing state before this one: the user's first message is still unanswered.
    opening = engine.snap.last_action is None
    engine.mark_user_facing()
    here = engine.qualified()
    if state.included_contexts:
        engine.recall(here, [engine.message], state.included_contexts, graph.memory.top_k)
    options = exit_options(state)
    request = build_request(
        engine,
        "action",
        graph=graph,
        state_id=here,
        state=state,
        options=options,
        allow_stay=True,
        opening=opening,
    )
    asked = ask(engine, request)
    engine.record(asked.decision)
    if asked.answer is None:
        return Reply(fallback_text(graph, state), fallback=True)
    if asked.answer.exit == STAY:
        return Reply(asked.answer.reply)
    option = _chosen(options, asked.answer.exit)
    return _move(option, asked.answer.reason, asked.answer.reply)


def step_decision(engine: Engine, graph: Graph, state: DecisionState) -> Outcome:
    return route(engine, graph, state, "decision")


def step_reflection(engine: Engine, graph: Graph, state: ReflectionState) -> Outcome:
    limit = engine.root.limits.max_reflections
    if engine.snap.reflections >= limit:
        return Stop("max_reflections", f"more than {limit} reflections in one turn")
    engine.snap.reflections += 1
    options = exit_options(state)
    here = engine.qualified()
    request = build_request(
        engine, "reflection", graph=graph, state_id=here, state=state, options=options
    )
    asked = ask(engine, request)
    if asked.answer is not None:
        engine.snap.add_note(asked.answer.note)
        engine.emit("note", state=here, note=asked.answer.note)
    return _routed(engine, asked, options)


def step_recall(engine: Engine, graph: Graph, state: RecallState) -> Outcome:
    context = engine.template_context(graph, engine.snap.frame.state)
    queries = [str(render_value(q, context)) for q in state.queries]
    engine.recall(engine.qualified(), queries, state.tiers, state.top_k)
    return route(engine, graph, state)


def step_annotation(engine: Engine, graph: Graph, state: AnnotationState) -> Outcome:
    engine.snap.add_tags(state.annotations)
    if state.annotations:
        engine.emit("annotation", state=engine.qualified(), tags=list(state.annotations))
    if state.set:
        context = engine.template_context(graph, engine.snap.frame.state)
        values = {name: render_value(source, context) for name, source in state.set.items()}
        engine.set_variables(values)
    return route(engine, graph, state)


def step_side_effect(engine: Engine, graph: Graph, state: SideEffectState) -> Outcome:
    here = engine.qualified()
    key = engine.idempotency_key()
    try:
        result = _call(engine, graph, state, key)
    except CgraphError as err:
        engine.emit("tool_call", state=here, tool=state.tool, key=key, status="failed",
                    error=err.message)  # fmt: skip
        if state.on_error:
            reason = f"the tool failed: {err.message}"
            return Move(ON_ERROR, state.on_error, "the tool failed or timed out", reason)
        return Stop(None, f"tool `{state.tool}` failed: {err.message}")
    engine.emit("tool_call", state=here, tool=state.tool, key=key, status="done", result=result)
    if state.result:
        engine.set_variables({state.result: result})
    return route(engine, graph, state)


def _call(engine: Engine, graph: Graph, state: SideEffectState, key: str) -> Any:
    tool = graph.tool(state.tool)
    if tool is None:
        raise ToolError(f"tool `{state.tool}` is not declared under `tools`")
    context = engine.template_context(graph, engine.snap.frame.state)
    arguments = {name: _render_deep(value, context) for name, value in state.arguments.items()}
    check_arguments(tool.name, tool.parameters, arguments)
    handler = load_handler(tool.handler, engine.folder_of(graph))
    # The intent is committed before the call: a crash during the call leaves a record
    # that this key was attempted, and the resumed step calls again with the same key.
    engine.emit("tool_call", state=engine.qualified(), tool=tool.name, key=key,
                status="started", arguments=arguments)  # fmt: skip
    engine.commit()
    return call_tool(handler, arguments, timeout=tool.timeout, idempotency_key=key, name=tool.name)


def _render_deep(value: Any, context: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        return {k: _render_deep(v, context) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_render_deep(v, context) for v in value]
    return render_value(value, context)


def step_graph(engine: Engine, graph: Graph, state: GraphState) -> Outcome:
    frame = engine.snap.frame
    if frame.returned:
        return route(engine, graph, state, "graph")
    key = engine.child_key(frame.graph, state.graph)
    return choose_start(engine, key, push=True)


def choose_start(engine: Engine, key: str, *, push: bool) -> Outcome:
    """Where a graph begins: its start state, or the model's pick among conditional entries."""
    graph = engine.graph(key)
    here = qualify(key, START)
    if isinstance(graph.start, str):
        reason = "the graph's start state"
        engine.record(engine_decision(here, "start", graph.start, reason))
        return Enter(key, graph.start, graph.start, f"start of {graph.name}", reason, push)
    options = start_options(graph.start)
    if len({o.target for o in options}) == 1:
        reason = "every entry leads to the same state"
        engine.record(engine_decision(here, "start", options[0].id, reason))
        return Enter(key, options[0].target, options[0].id, options[0].description, reason, push)
    request = build_request(engine, "start", graph=graph, state_id=here, state=None,
                            options=options, extra=engine.memory_metadata())  # fmt: skip
    asked = ask(engine, request)
    engine.record(asked.decision)
    if asked.answer is None:
        return Stop(None, "the model could not choose where to start")
    option = _chosen(options, asked.answer.exit)
    return Enter(key, option.target, option.id, option.description, asked.answer.reason, push)


Handler = Callable[["Engine", Graph, Any], Outcome]
HANDLERS: dict[str, Handler] = {
    "action": step_action,
    "decision": step_decision,
    "reflection": step_reflection,
    "recall": step_recall,
    "annotation": step_annotation,
    "side_effect": step_side_effect,
    "graph": step_graph,
}

__all__ = ["HANDLERS", "Enter", "Move", "Outcome", "Reply", "Stop", "authored_reply"]
