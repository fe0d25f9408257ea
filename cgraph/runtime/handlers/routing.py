"""Leaving a silent state: a `when:` that holds, the only way out, or the model's choice.

Shared by the handlers: the exit taken as a `Move`, the model asked about a state, and a
state's `say:` line added to the turn's reply on the way out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cgraph.runtime.ask.choosing import Decided, decide
from cgraph.runtime.ask.exchange import engine_decision
from cgraph.runtime.ask.questions import Ask
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.needs import Steps
from cgraph.runtime.ports import ExitOption, RequestKind
from cgraph.runtime.routes.exits import first_holding, holds, state_exits
from cgraph.runtime.routes.failures import rendered
from cgraph.runtime.state.outcomes import Effects, Move, Outcome, Say, Stop
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.templating import is_template, render_text


def take(
    option: ExitOption, reason: str, effects: Effects, reply: str = "", owner: str | None = None
) -> Move:
    """The move of taking `option` (`owner`: the graph declaring it, for a global exit)."""
    return Move(
        option.id,
        option.target,
        option.description,
        reason,
        reply,
        effects,
        owner,
        resume=option.resume,
        drop=option.drop,
        handoff=option.handoff,
    )


def option_by_id(options: tuple[ExitOption, ...], exit_id: str) -> ExitOption:
    return next(o for o in options if o.id == exit_id)


def ask_state(
    ctx: StepContext, kind: RequestKind, graph: Graph, state: AnyState, ask: Ask
) -> Steps[Decided]:
    """The chooser asked `ask` about `state`; its choice checked (`choosing.decide`)."""
    posed = ctx.requests.pose(
        ctx.view,
        kind,
        graph=graph,
        state_id=ctx.view.here,
        state=state,
        ask=ask,
        templates=ctx.templates,
    )
    return (yield from decide(ctx.chooser, posed, ctx.requests))


def route(
    ctx: StepContext,
    graph: Graph,
    state: AnyState,
    kind: RequestKind = "decision",
    before: Effects = (),
) -> Steps[Outcome]:
    """Leave a silent state: the first `when` exit that holds, its single way out, or the
    model's choice among the described exits whose `when` holds."""
    known = state_exits(state)
    exits, options = known.exits, known.options
    # Built only when read (a `say:`, a `when:`): most silent steps read neither.
    reads = state.say or known.conditional
    context = ctx.templates() if reads else {}
    before = (*before, *_said(ctx.view.here, state, context))
    taken = first_holding(exits, context)
    here = ctx.view.here
    if taken is not None:
        option = options[taken[0]]
        reason = f"`when: {taken[1].when}` holds" if taken[1].when else "no `when` held (else)"
        return take(option, reason, (*before, engine_decision(here, kind, option.id, reason)))
    open_ = tuple(
        o for o, e in zip(options, exits, strict=True) if e.description and holds(e, context)
    )
    if not open_:
        return Stop(None, f"no exit of `{here}` holds", effects=before)
    if len(open_) == 1:
        chosen = engine_decision(here, kind, open_[0].id, "the only way out")
        return take(open_[0], "the only way out", (*before, chosen))
    asked = yield from ask_state(ctx, kind, graph, state, Ask(options=open_))
    return routed(asked, open_, (*before, *asked.effects))


def _said(here: str, state: AnyState, context: Mapping[str, Any]) -> Effects:
    """A silent state's `say:` line for the turn's reply (a failing one fails the step)."""
    say = state.say
    if state.type == "action" or not say:
        return ()
    text = rendered(here, "say", lambda: render_text(say, context) if is_template(say) else say)
    text = text.strip()
    return (Say(text),) if text else ()


def routed(asked: Decided, options: tuple[ExitOption, ...], effects: Effects) -> Outcome:
    choice = asked.value
    if choice is None:
        return Stop(None, "the model gave no usable answer", effects=effects)
    return take(option_by_id(options, choice.exit), str(choice.reason), effects)
