"""Starting a session: the graph and the model it runs with, where it stands first, and
its record in the store (`Sessions.start`; `Sessions.resume` opens graph and model alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cgraph.errors import ConfigError
from cgraph.runtime.ports import (
    ChatModel,
    ExitChooser,
    SessionInfo,
)
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import frame_defaults, slot_defaults
from cgraph.runtime.state.records import Event
from cgraph.runtime.state.snapshot import Frame, LogPosition, SessionState, jsonable, stored
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import SEPARATOR, START
from cgraph.wiring.models import Models, models_of, resolve_model


def graph_of(graph: Graph | str | Path) -> Graph:
    return graph if isinstance(graph, Graph) else load_graph(graph)


def session_models(
    spec: Graph, model: ChatModel | ExitChooser | str | None, api_base: str | None
) -> Models:
    """What a session chooses and talks with: `model`, else the graph's (`resolve_model`)."""
    made = resolve_model(
        model,
        spec.model,
        api_base=api_base,
        embedding_model=spec.embedding_source(),
        acts=spec.acts,
    )
    return models_of(made)


def prepare(spec: Graph, model: ChatModel | ExitChooser | str | None, api_base: str | None) -> None:
    """Load now what the first turn of a session of `spec` would load: its models resolved
    as a session resolves them (a provider's library imported, the name and key checked),
    then what each prepares ahead of its first call (`prepare(graph)`, when it has one).
    A server does it before it takes requests: its first user does not wait seconds for
    it after `/readyz` said ready."""
    made = session_models(spec, model, api_base)
    for part in {id(m): m for m in (made.chooser, made.chat) if m is not None}.values():
        preparing = getattr(part, "prepare", None)
        if callable(preparing):
            preparing(spec)


def initial_state(
    graph: Graph, state: str | None = None, variables: Mapping[str, Any] | None = None
) -> SessionState:
    """Where a new session stands: the graph's start, or `state` as if already entered.

    `variables` override the graph's initial values; a test starts a deep state this way
    without replaying the conversation that leads to it.
    """
    values = jsonable({**slot_defaults(graph), **graph.variables, **(variables or {})})
    if state is None:
        first = graph.start if isinstance(graph.start, str) else START
        return SessionState(stack=(Frame("", first),), variables=values)
    here = _stack_at(graph, state)
    inner = Graphs(graph)
    spec = inner.get(here[-1].graph).states[here[-1].state]
    facing = here if spec.type == "action" else None
    # A sub-graph's own variables join as they would when it is entered.
    for frame in here[1:]:
        declared = inner.get(frame.graph).variables
        values = {**jsonable({k: v for k, v in declared.items() if k not in values}), **values}
    return SessionState(
        stack=here, variables=values, started=True, visits={state: 1}, last_action=facing
    )


def _stack_at(graph: Graph, state: str) -> tuple[Frame, ...]:
    """The stack of a session standing at `state`: a root state, or `file.yaml#state` in a
    sub-graph, under the `graph` states that enter it (found from the root, breadth
    first); `ConfigError` naming what there is when there is no such state."""
    key, _, name = state.rpartition(SEPARATOR)
    graphs = Graphs(graph)
    paths: dict[str, tuple[Frame, ...]] = {"": ()}
    queue = [""]
    while queue and key not in paths:
        parent = queue.pop(0)
        for state_id, spec in graphs.get(parent).states.items():
            if isinstance(spec, GraphState):
                child = graphs.child_key(parent, spec.graph)
                if child not in paths:
                    paths[child] = (*paths[parent], Frame(parent, state_id))
                    queue.append(child)
    if key not in paths:
        raise ConfigError(
            f"graph `{graph.name}` enters no sub-graph `{key}`; see its `graph` states"
        )
    inner = graphs.get(key)
    if name not in inner.states:
        known = ", ".join(sorted(inner.states))
        raise ConfigError(f"graph `{inner.name}` has no state `{name}`; its states are {known}")
    slots = jsonable(frame_defaults(inner)) if key else {}
    return (*paths[key], Frame(key, name, slots=slots))


FIRST = LogPosition(seq=1)
"""Where a new session's log stands: its `session_started` event written."""


def create(deps: Dependencies, state: SessionState) -> tuple[SessionInfo, Event]:
    """Write a new session to its store: its info, `state` and the `session_started`
    event (returned with the info; the log's position is `FIRST`)."""
    spec, now = deps.graph, deps.clock()
    source = str(spec.source.resolve()) if spec.source else ""
    model = deps.model.name
    info = SessionInfo(deps.session_id, deps.user_id, source, spec.name, model, created_at=now)
    started = {"graph": source, "graph_name": spec.name, "user": deps.user_id, "model": model}
    first = Event.model_construct(
        seq=0, session=info.id, turn=0, kind="session_started", at=now, data=started
    )
    announce = deps.announce
    told = () if announce is None else announce.started(spec.name, info.id, deps.user_id)
    deps.store.create(info, stored(state, FIRST), [first], deliveries=told)
    return info, first
