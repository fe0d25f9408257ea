"""What a session shows at one moment: a frozen `SessionView`, taken when asked for.

`Session.view` builds one from the engine's state and log; nothing in it reaches back into
the session, so a front end may keep it, hand it to another thread or render it later
while the session runs on. Its containers are copies: changing one changes nothing in the
session (plain dicts inside, so a view's parts go to JSON as they are).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cgraph.errors import CgraphError
from cgraph.runtime.ask.streaming import can_stream
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.turn.engine import Engine
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import split


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionView:
    """A session's state, variables and transcript as they stood when it was taken."""

    id: str
    user_id: str
    graph: Graph
    """The graph the session runs (the root one)."""
    state: str
    """The current state's qualified id (`START` before a conditional start is chosen)."""
    current_graph: Graph
    """The graph the current state belongs to (a sub-graph while inside one)."""
    current_state: AnyState | None
    """The current state's spec (None before a conditional start is chosen)."""
    turn_number: int
    """The number of the latest turn still in effect (0 before the first message)."""
    completed: bool
    """True once the conversation reached `END`; `send` then raises `SessionCompleted`."""
    interrupted: str | None
    """The user message of a turn that started but did not finish, if any."""
    variables: dict[str, Any]
    """The session's variables (the graph's, as set by states and tools), with the slots
    of the sub-graphs running now."""
    notes: tuple[str, ...]
    """Reflection notes (internal; never shown to the user as replies)."""
    annotations: tuple[str, ...]
    """Tags written by annotation states so far, oldest first."""
    transcript: tuple[dict[str, str], ...]
    """`{"role": "user"|"assistant", "content": ...}` messages."""
    summary: str
    """The running summary of the messages that left the prompt's window ("" if none)."""
    streams: bool
    """The reply can be shown as the model writes it (`Session.stream`)."""
    graphs: Graphs = field(repr=False, compare=False)

    def state_spec(self, name: str) -> AnyState | None:
        """The spec of a state this session has been in, by its qualified id (a decision's
        `state`); None for `START`, `END` or a graph it never entered."""
        graph_key, state_id = split(name)
        try:
            graph = self.graphs.get(graph_key)
        except CgraphError:
            return None
        return graph.states.get(state_id)


def view_of(session_id: str, engine: Engine) -> SessionView:
    """The session's view now, from its engine."""
    state = engine.state
    return SessionView(
        id=session_id,
        user_id=engine.deps.user_id,
        graph=engine.deps.graph,
        state=engine.qualified(),
        current_graph=engine.current_graph(),
        current_state=engine.current_state(),
        turn_number=state.turn,
        completed=state.completed,
        interrupted=state.pending,
        variables=dict(state.readable),
        notes=tuple(state.notes),
        annotations=tuple(state.annotations),
        transcript=tuple(dict(m) for m in engine.log.transcript),
        summary=state.marks.summary,
        streams=can_stream(engine.deps.chat),
        graphs=engine.graphs,
    )
