"""A session as the studio page shows it: each turn with what `/why` shows (every choice
made, its candidates and scores, its reason), the slots it filled or corrected, and what
to light on the drawing now; the session's variables beside it.
"""

from __future__ import annotations

from typing import Any

from cgraph.draw.focus import Drawing
from cgraph.runtime.state.records import step_name
from cgraph.serve.ids import client_id
from cgraph.session import Session, SessionView, Turn
from cgraph.spec.names import END


def looked(
    session: Session, drawing: Drawing, after: int, opened: frozenset[str]
) -> dict[str, Any]:
    """The turns after number `after`, the variables, and the drawing's ids to light."""
    turns, view = session.log.turns(), session.view
    last = turns[-1] if turns else None
    state = END if view.completed else view.state
    spec = view.current_state
    focus = drawing.focus(
        session.log.audit(),
        last.transitions if last is not None else (),
        last.path if last is not None else (),
        state,
        opened,
    )
    return {
        "session": client_id(session.user_id, session.id),
        "graph": session.graph.name,
        "state": state,
        "type": None if view.completed or spec is None else spec.type,
        "completed": view.completed,
        "turn": view.turn_number,
        "variables": view.variables,
        # where open interruptions come back to, the next last (`resume: true` exits)
        "interrupted": list(last.interrupted) if last is not None else [],
        "turns": [shown(view, t) for t in turns if t.number > after],
        "focus": focus.as_json(),
    }


def shown(view: SessionView, turn: Turn) -> dict[str, Any]:
    """One turn: its `Turn.as_json()` with `why` (its decisions, each named by its step),
    `slots` (values taken from the message: state, values, corrected) and `effects` (the
    side-effect states' tool calls)."""
    why = []
    for decision in turn.decisions:
        spec = view.state_spec(decision.state)
        kind = spec.type if spec is not None else None
        why.append({**decision.model_dump(mode="json"), "step": step_name(decision, kind)})
    return {
        **turn.as_json(),
        "why": why,
        "slots": [dict(s) for s in turn.slots],
        "effects": [dict(call) for call in turn.effects],
    }
