"""Corrections the designer wants confirmed (`confirm_correction: true` on a slot).

A new value for such a slot, once it holds one, is held back: the turn asks "Change the
handle from @sam to @sammy?" (the slot's `correction_question`, else that sentence) and
the session keeps the proposal (`SessionState.correcting`). The next message settles it:
the chooser — offline or a model, like any choice — picks between changing and keeping,
and the state then goes on as if the slot had just been filled (or not), after the
slot's `correction_reply` ("Ok, updating the amount to 60.") when it was changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cgraph.runtime.ask.questions import Ask
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.routing import ask_state
from cgraph.runtime.needs import Steps
from cgraph.runtime.ports import ExitOption
from cgraph.runtime.routes.failures import rendered
from cgraph.runtime.state.outcomes import Effects, Emit, Reply, Say, SetVariables
from cgraph.spec.model import ActionState, Graph
from cgraph.spec.templating import is_template, render_text

CHANGE, KEEP = "change", "keep"


def held_back(
    graph: Graph,
    found: Mapping[str, Any],
    variables: Mapping[str, Any],
    *,
    adding: Sequence[str] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the values to set now, the corrections to confirm first): a new value for a slot
    with `confirm_correction` that already holds another one waits for the user's yes (a
    list added to, `adding`, is not corrected)."""
    now, held = {}, {}
    for name, value in found.items():
        slot = graph.slots.get(name)
        old = variables.get(name)
        confirm = slot is not None and slot.confirm_correction and name not in adding
        if confirm and old is not None and old != value:
            held[name] = value
        else:
            now[name] = value
    return now, held


def ask_correction(
    ctx: StepContext, graph: Graph, held: Mapping[str, Any], effects: Effects
) -> Reply:
    """The turn's reply asks about the held corrections, one question each."""
    questions = [_question(ctx, graph, name, value) for name, value in held.items()]
    return Reply(" ".join(questions), effects=effects, correcting=dict(held))


def _question(ctx: StepContext, graph: Graph, name: str, new: Any) -> str:
    old = ctx.view.variables.get(name)
    template = graph.slots[name].correction_question
    if template is None:
        return f"Change {name.replace('_', ' ')} from {old} to {new}?"
    return _words(ctx, "correction_question", template, name, old, new)


def _words(ctx: StepContext, field: str, template: str, name: str, old: Any, new: Any) -> str:
    """A slot's correction text, rendered with `slot`, `old` and `new` (a failing one
    fails the step, naming the field)."""
    words = {"slot": name.replace("_", " "), "old": old, "new": new}
    render = lambda: render_text(template, words) if is_template(template) else template  # noqa: E731
    return rendered(ctx.view.here, field, render).strip()


def settle(
    ctx: StepContext, graph: Graph, state: ActionState, effects: Effects
) -> Steps[tuple[StepContext, Effects, bool]]:
    """Change or keep each proposed value, as the chooser reads the user's answer (a
    failed choice keeps the old value: nothing changes without a yes); and whether one
    was changed."""
    variables = ctx.view.variables
    changed: dict[str, Any] = {}
    for name, new in ctx.view.correcting.items():
        old = variables.get(name)
        options = (
            ExitOption(
                CHANGE,
                f"The user agrees to change {name} from {old} to {new}.",
                CHANGE,
                ("yes", "yes, change it", "correct, that's right", f"make it {new}"),
            ),
            ExitOption(
                KEEP,
                f"The user wants to keep {name} as {old}.",
                KEEP,
                ("no", "no, keep it", f"leave it as {old}", "never mind"),
            ),
        )
        ask = Ask(options=options, may_clarify=False)
        asked = yield from ask_state(ctx, "action", graph, state, ask)
        effects += asked.effects
        if asked.value is not None and asked.value.exit == CHANGE:
            changed[name] = new
    if not changed:
        return ctx, effects, False
    corrected = {name: variables.get(name) for name in changed}
    record = {"state": ctx.view.here, "values": changed, "corrected": corrected}
    effects += (SetVariables(changed), Emit("slots", record))
    for name, new in changed.items():  # "Ok, updating the amount to 60.", said first
        reply = graph.slots[name].correction_reply
        said = _words(ctx, "correction_reply", reply, name, corrected[name], new) if reply else ""
        effects += (Say(said),) if said else ()
    return ctx.seeing(variables={**variables, **changed}), effects, True
