"""Starting a session: the graph and the model it runs with, where it stands first, and
its record in the store (`Session.start`; `Session.resume` opens graph and model alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.backends.store.outbox import Delivery as Delivery  # for the server to name
from cgraph.backends.store.outbox import Outbox as Outbox
from cgraph.backends.store.outbox import PostgresOutbox, SQLiteOutbox
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import ConfigError, StoreError
from cgraph.models import Models, models_of, resolve_model
from cgraph.runtime.ports import (
    ChatModel,
    ExitChooser,
    MemoryStore,
    NullMemory,
    SessionInfo,
    SessionStore,
)
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.routes.slots import frame_defaults, slot_defaults
from cgraph.runtime.state.records import Event
from cgraph.runtime.state.snapshot import Frame, LogPosition, SessionState, jsonable, stored
from cgraph.runtime.turn.dependencies import Dependencies
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import SEPARATOR, START


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
    deps.store.create(info, stored(state, FIRST), [first])
    return info, first


STORE_FILE = "sessions.sqlite"
URL_SCHEMES = ("postgresql://", "postgres://")
"""Store names that are a database server's URL (`cgraph.backends.store.postgres`)."""


def is_url(store: Any) -> bool:
    """Whether `store` names a database server rather than a folder or a file."""
    return isinstance(store, str) and store.startswith(URL_SCHEMES)


def open_store(store: Any) -> SessionStore:
    """A `SessionStore` as given, a `postgresql://` URL, a folder (→
    `<folder>/sessions.sqlite`), a `.sqlite` file, or None (in memory)."""
    if store is None:
        return InMemorySessionStore()
    if is_url(store):
        from cgraph.backends.store.postgres import PostgresStore  # psycopg: only for a URL

        return PostgresStore(str(store))
    if isinstance(store, str | Path):
        path = Path(store)
        if path.suffix in (".sqlite", ".db", ".sqlite3"):
            return SQLiteStore(path)
        return SQLiteStore(path / STORE_FILE)
    if isinstance(store, SessionStore):
        return store
    raise StoreError(
        "store must be a folder, a .sqlite file, a postgresql:// URL, a SessionStore or None, "
        f"not {store!r}"
    )


def migrate_store(store: str | Path) -> tuple[int, int]:
    """Bring a store's tables to this cgraph's layout: (version before, version now)."""
    if is_url(store):
        from cgraph.backends.store.postgres import migrate

        return migrate(str(store))
    from cgraph.backends.store.sqlite import migrate_file

    path = Path(store)
    return migrate_file(
        path if path.suffix in (".sqlite", ".db", ".sqlite3") else path / STORE_FILE
    )


def open_outbox(store: str) -> Outbox:
    """The webhook outbox beside a store (`cgraph.backends.store.outbox`): the table
    `cgraph_webhook_deliveries` of a PostgreSQL store, else `webhooks.sqlite` in the
    store's folder (beside a `.sqlite` file: `<name>.webhooks.sqlite`)."""
    if is_url(store):
        return PostgresOutbox(store)
    path = Path(store)
    if path.suffix in (".sqlite", ".db", ".sqlite3"):
        return SQLiteOutbox(path.with_name(f"{path.stem}.webhooks.sqlite"))
    return SQLiteOutbox(path / "webhooks.sqlite")


MEMORY_OFF = "off"
CHROMA_SCHEME = "chroma://"


def open_memory_store(graph: Graph, where: str | None, folder: Path | None) -> MemoryStore:
    """The memories a served graph keeps: none (`off`), a Chroma server
    (`chroma://host:port`, unless the graph names a server of its own), else the graph's
    own server, else an embedded Chroma in `folder/memory` (one process's)."""
    if where == MEMORY_OFF:
        return NullMemory()
    from dataclasses import replace

    from cgraph.backends.memory.chroma import open_memory

    config = graph.memory
    if where is not None and not config.host:
        host, port = chroma_address(where)
        config = replace(config, host=host, port=port)
    return open_memory(config, folder)


def chroma_address(where: str) -> tuple[str, int]:
    """(host, port) of `chroma://host:port`; `ConfigError` for anything else."""
    host, _, port = where.removeprefix(CHROMA_SCHEME).rstrip("/").rpartition(":")
    if not where.startswith(CHROMA_SCHEME) or not host or not port.isdigit():
        raise ConfigError(
            f"--memory {where}: expected `off` or chroma://HOST:PORT (a Chroma server)"
        )
    return host, int(port)
