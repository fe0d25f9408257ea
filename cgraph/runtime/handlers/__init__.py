"""One step per state type: each handler looks at a state and says what happens next.

A handler is a function of a `StepContext` (`context`: the step's frame, built once per
step, whose template context is built once per view), the graph and the state (the
frame's own, passed again as typed arguments). It never changes the session: it returns
an outcome (`cgraph.runtime.state.outcomes`) with the step's effects, and the engine
checks and applies it. The one write a handler makes is a tool call's intent, committed
before the call (see `silent._call`).

`HANDLERS` maps each state type to its step: `action` (the state that talks to the user),
`silent` (decision, reflection, recall, annotation, side effect), `entering` (a `graph`
state, and `choose_start` where a graph begins); `routing` is how a silent state leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cgraph.runtime.handlers.action import step_action
from cgraph.runtime.handlers.context import StepContext
from cgraph.runtime.handlers.entering import step_graph
from cgraph.runtime.handlers.silent import (
    step_annotation,
    step_decision,
    step_recall,
    step_reflection,
    step_side_effect,
)
from cgraph.runtime.needs import Steps
from cgraph.runtime.state.outcomes import Outcome
from cgraph.spec.model import Graph

StepHandler = Callable[[StepContext, Graph, Any], Steps[Outcome]]
"""A step as steps (`cgraph.runtime.needs`): what it waits on yielded, its outcome returned."""
HANDLERS: dict[str, StepHandler] = {
    "action": step_action,
    "decision": step_decision,
    "reflection": step_reflection,
    "recall": step_recall,
    "annotation": step_annotation,
    "side_effect": step_side_effect,
    "graph": step_graph,
}
