"""The action state's step: the state that talks to the user.

It recalls what the state includes, passes through a `collect` state whose slots are
already filled, asks the model (with the state's tools, when the model calls them) for a
reply, slot values and an exit, and takes a deterministic `when:` exit once every slot is
filled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cgraph.errors import SlotValueError
from cgraph.runtime.ask.choosing import Decided
from cgraph.runtime.ask.exchange import engine_decision
from cgraph.runtime.ask.questions import Ask, action_ask
from cgraph.runtime.ask.requests import authored_reply
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.corrections import ask_correction, held_back, settle
from cgraph.runtime.handlers.routing import ask_state, option_by_id, take
from cgraph.runtime.needs import Steps
from cgraph.runtime.ports import CLARIFY, STAY, Choice, ExitOption
from cgraph.runtime.routes.exits import (
    exit_options,
    first_holding,
    first_rule,
    global_exits,
    holds,
    options_with_globals,
    state_exits,
    with_costs,
)
from cgraph.runtime.routes.failures import StepRenderFailed, fallback, rendered
from cgraph.runtime.routes.slots import appended, slot_changes, tool_values, unfilled
from cgraph.runtime.state.outcomes import (
    Effects,
    Emit,
    MarkUserFacing,
    Outcome,
    Reply,
    SetVariables,
    TakeMessage,
)
from cgraph.runtime.tools.calls import Calling, ask_with_tools
from cgraph.spec.model import ActionState, ExitCondition, Graph
from cgraph.spec.templating import is_template, render_text


def step_action(ctx: StepContext, graph: Graph, state: ActionState) -> Steps[Outcome]:
    effects: Effects = (MarkUserFacing(),)
    if state.included_contexts:
        found = yield from ctx.memory.recall(
            ctx.view.here, [ctx.view.message], state.included_contexts, graph.memory.top_k
        )
        if found.memories:  # an unchanged view keeps its frame
            ctx = ctx.seeing(memories=ctx.view.memories + found.memories)
        effects += found.events
    if ctx.view.correcting:  # last turn asked whether to change a slot: this settles it
        ctx, effects, changed = yield from settle(ctx, graph, state, effects)
        ruled = _deterministic(ctx, graph, state, effects)
        if ruled is None and changed:  # the corrected value is checked now, not next turn
            ruled = _ruled(ctx, graph, state, effects)
        return ruled or _reply(ctx, graph, state, effects)
    passed = _passed_through(ctx, graph, state, effects)
    if passed is not None:
        return passed
    options, owners = _action_options(ctx, graph, state)
    asked = action_ask(ctx.view, graph, state, options)
    called: frozenset[str] = frozenset()
    if state.tools and ctx.calls_tools:
        decided, calls = yield from _ask_with_tools(ctx, graph, state, asked)
        effects += calls
        ctx, effects, called = _tool_results(ctx, graph, calls, effects)
    else:
        decided = yield from ask_state(ctx, "action", graph, state, asked)
        effects += _offline_tools(ctx, state)
    effects += decided.effects
    if ctx.view.offered:
        effects += (TakeMessage(),)
    answer = decided.value
    if answer is None:
        text, failed = fallback(graph, state, ctx.view.here, ctx.templates())
        return Reply(text, fallback=True, effects=(*effects, *failed))
    # An interruption's message is about the detour ("first remove @bob"): its values are
    # no answer to the state it interrupts, which is taken up again as it was left (a
    # sub-graph the detour enters reads the message for its own slots).
    interrupts = answer.exit not in (STAY, CLARIFY) and option_by_id(options, answer.exit).resume
    given = {} if interrupts else appended(state.append, answer.slots, ctx.view.variables)
    values, held = held_back(graph, given, ctx.view.variables, adding=state.append)
    ctx, effects, corrected = _fill(ctx, values, effects, adding=state.append)
    if held:  # a correction the designer wants confirmed is asked about first
        return ask_correction(ctx, graph, held, effects)
    if answer.exit == CLARIFY:
        # About to ask once more: a rule on the questions asked so far (`clarifications
        # >= 2`, "after two, hand off") is taken instead; no other step takes one.
        ruled = _ruled(ctx, graph, state, effects, asking=True)
        if ruled is not None:
            return ruled
        question = _clarifying(ctx, graph, state, answer, options)
        return Reply(question, effects=effects, asked=answer.candidates, clarifies=True)
    if answer.exit != STAY:
        option = option_by_id(options, answer.exit)
        # Once the turn's slots are in, a `when:` exit that holds is a business rule: it
        # wins over a described exit of the state (not over an early or global one).
        ruled = None if option.early else _deterministic(ctx, graph, state, effects, called)
        if ruled is not None:
            return ruled
        return take(option, str(answer.reason), effects, answer.reply, owners.get(option.id))
    taken = None
    if not ctx.view.entered or not state.ask_before_filling:
        taken = _deterministic(ctx, graph, state, effects, called)
    if taken is None and corrected:
        taken = _ruled(ctx, graph, state, effects)
    if taken is not None:
        return taken
    if answer.reply:
        return Reply(answer.reply, effects=effects)
    return _reply(ctx, graph, state, effects, answer.preface)


def _reply(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects, preface: str = ""
) -> Reply:
    """The state's own words (a chooser that writes none), rendered after this step's
    slots are filled: the reply never shows a value the user just corrected (nor leaves
    out an item of a list the same message gave), after the chooser's `preface`."""
    said = authored_reply(state, ctx.templates(), ctx.view.here)
    return Reply(f"{preface} {said}".strip() if preface else said, effects=effects)


def _clarifying(
    ctx: StepContext,
    graph: Graph,
    state: ActionState,
    choice: Choice,
    options: tuple[ExitOption, ...],
) -> str:
    """The clarifying question: the designer's `clarify:` template (reading `candidates`,
    the exits' descriptions, likeliest first), else the chooser's own words, else one
    naming the descriptions as they are."""
    named = [o.label or o.description for c in choice.candidates for o in options if o.id == c]
    template = graph.clarify_of(state)
    if isinstance(template, str):
        words = {**ctx.templates(), "candidates": named}
        render = lambda: render_text(template, words) if is_template(template) else template  # noqa: E731
        return rendered(ctx.view.here, "clarify", render).strip()
    if choice.question:
        return choice.question
    said = [d.rstrip(".")[:1].lower() + d.rstrip(".")[1:] for d in named]
    if len(said) == 1:
        return f"Before I go on, can you confirm this: {said[0]}?"
    return "Before I go on, which do you mean: " + ", or ".join(said) + "?"


def _action_options(
    ctx: StepContext, graph: Graph, state: ActionState
) -> tuple[tuple[ExitOption, ...], dict[str, str]]:
    """(the options offered, the global ones' owners).

    A graph without global exits and a state without `when:` offer the same options every
    step: they are built once per state, and no condition is evaluated."""
    frames = _frames(ctx)
    known = state_exits(state)
    if not known.conditional and not any(g.global_exits for _, g, _ in frames):
        return with_costs(graph, known.described), {}
    context = ctx.templates()
    anywhere = list(global_exits(frames, context))
    described = [e for e in state.exit_conditions if e.description and holds(e, context)]
    options, owners = options_with_globals(anywhere, described)
    return with_costs(graph, options), owners


def _frames(ctx: StepContext) -> list[tuple[str, Graph, str]]:
    frames = ctx.view.frames or ((ctx.view.graph_key, ctx.view.state_id),)
    return [(key, ctx.graphs.get(key), state) for key, state in frames]


def _fill(
    ctx: StepContext, found: dict[str, Any], effects: Effects, *, adding: tuple[str, ...] = ()
) -> tuple[StepContext, Effects, bool]:
    """Slot values from the answer: set, and logged (a changed value as a correction; a
    list added to, `adding`, is no correction); and whether one was a correction."""
    new, corrected = slot_changes(found, ctx.view.variables)
    corrected = {k: v for k, v in corrected.items() if k not in adding}
    if not new:
        return ctx, effects, False
    record = {"state": ctx.view.here, "values": new, "corrected": corrected}
    effects = (*effects, SetVariables(new), Emit("slots", record))
    return ctx.seeing(variables={**ctx.view.variables, **new}), effects, bool(corrected)


def _passed_through(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects
) -> Outcome | None:
    """A collect state entered with its slots already filled is passed through (no model);
    one a `RESUME` takes up again first checks its `when:` rules (the interruption may
    have changed what they read)."""
    if ctx.view.resumed and ctx.view.entered:
        ruled = _ruled(ctx, graph, state, effects)
        if ruled is not None:
            return ruled
    if not (state.collect and ctx.view.entered) or state.ask_before_filling:
        return None
    return _deterministic(ctx, graph, state, effects)


def _deterministic(
    ctx: StepContext,
    graph: Graph,
    state: ActionState,
    effects: Effects,
    called: frozenset[str] = frozenset(),
) -> Outcome | None:
    """The first `when` (or `on_tool`) exit that holds, once the state's `collect` slots
    are all filled (before, only one that says `early: true`); `called`: the tools the
    model called here this turn."""
    waiting = bool(unfilled(state.collect, ctx.view.variables))
    if not _any_deterministic(state, early=waiting):
        return None
    context = ctx.templates()
    taken = first_holding(state.exit_conditions, context, called, early=waiting)
    if taken is None:
        return None
    option = exit_options(state)[taken[0]]
    reason = _why_taken(taken[1])
    chosen = engine_decision(ctx.view.here, "action", option.id, reason)
    return take(option, reason, (*effects, chosen))


def _ruled(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects, *, asking: bool = False
) -> Outcome | None:
    """On a step where values changed under the state (a correction, a `RESUME`), or one
    `asking` a clarifying question: the first `when:` exit that holds and reads no slot
    still to be collected, so a rule on the changed value (or on the questions asked) is
    applied on this turn, not once the rest is filled."""
    if not state_exits(state).conditional:
        return None
    context = ctx.templates()
    missing = unfilled(state.collect, ctx.view.variables)
    taken = first_rule(state.exit_conditions, context, missing, asking=asking)
    if taken is None:
        return None
    option = exit_options(state)[taken[0]]
    why = "instead of asking again" if asking else "on the changed values"
    reason = f"`when: {taken[1].when}` holds {why}"
    return take(
        option, reason, (*effects, engine_decision(ctx.view.here, "action", option.id, reason))
    )


def _why_taken(exit_: ExitCondition) -> str:
    said = [f"the model called `{exit_.on_tool}`"] if exit_.on_tool else []
    said += [f"`when: {exit_.when}` holds"] if exit_.when else []
    return " and ".join(said) or "its slots are filled"


def _tool_results(
    ctx: StepContext, graph: Graph, calls: Effects, effects: Effects
) -> tuple[StepContext, Effects, frozenset[str]]:
    """What the model's calls set (each tool's `result:` and `sets:`), in the order they
    ran, and the tools called successfully: the state's `when:` and `on_tool:` exits read
    them on this turn, as a side-effect state's exits read its result."""
    found: dict[str, Any] = {}
    called = []
    for call in calls:
        data = call.data if isinstance(call, Emit) else {}
        tool = graph.tool(str(data.get("tool", "")))
        if data.get("status") != "done" or data.get("by") != "model" or tool is None:
            continue
        called.append(tool.name)
        try:
            found |= tool_values(graph, tool, data.get("result"), by_model=True)
        except SlotValueError as err:
            raise StepRenderFailed(ctx.view.here, f"tools.{tool.name}", err) from err
    if found:
        effects = (*effects, SetVariables(found))
        ctx = ctx.seeing(variables={**ctx.view.variables, **found})
    return ctx, effects, frozenset(called)


def _any_deterministic(state: ActionState, *, early: bool = False) -> bool:
    return any(e.description is None and (e.early or not early) for e in state.exit_conditions)


def _ask_with_tools(
    ctx: StepContext, graph: Graph, state: ActionState, asked: Ask
) -> Steps[tuple[Decided, Effects]]:
    """The action's question with the state's tools offered (see `cgraph.runtime.tools.calls`)."""
    budget = max(ctx.root.limits.max_tool_calls - ctx.view.tool_calls, 0)
    offering = replace(asked, tools=state.tools if budget else ())
    posed = ctx.requests.pose(
        ctx.view,
        "action",
        graph=graph,
        state_id=ctx.view.here,
        state=state,
        ask=offering,
        templates=ctx.templates,
    )
    calling = Calling(
        graph,
        ctx.graphs.folder_of(graph),
        ctx.view.here,
        ctx.view.idempotency_key,
        state.tools,
        budget,
        ctx.journal,
        ctx.tools,
    )
    return (yield from ask_with_tools(ctx.chooser, posed, ctx.requests, calling))


def _offline_tools(ctx: StepContext, state: ActionState) -> Effects:
    """Logged every turn in a state that offers tools to a model that calls none (a
    turn's warnings say it once a session: `log_view.lasting_notes`)."""
    if not state.tools:
        return ()
    names = ", ".join(f"`{t}`" for t in state.tools)
    verb = "is" if len(state.tools) == 1 else "are"
    note = (
        f"the {ctx.chooser.name} model calls no tools: {names}, offered "
        f"here, {verb} not called (side-effect states still run theirs)"
    )
    return (Emit("tool_call", {"state": ctx.view.here, "status": "skipped", "error": note}),)
