"""Opening a run: the options of `cgraph run`, checked in order, then the session.

Everything that can be refused cheaply is checked before anything heavy is imported or
started: the store folder, the graph, the session (its owner), then the model and its
credentials. Only then do the embedding model and the memory store start loading in the
background, so an error is printed and the process exits at once (no thread is left
importing torch or chromadb while the interpreter shuts down). One exception: a run that
is surely offline with the default model (no `--model` or `--session`, no `model:` in
the graph) starts loading that model (ONNX Runtime, no torch) as soon as the graph is
read, so the lint and the runtime's imports overlap with it; a run refused later ends
at once all the same (`cgraph.cli.exit_now`).

The model is `--model`, else the model the session was started with, else the graph's
`model.name` when its credentials are present, else the offline semantic mode.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cgraph.cli import cannot_write, not_a_graph_file, started
from cgraph.errors import ConfigError, GraphError
from cgraph.spec.limits import ReadLimits, text_problem
from cgraph.spec.model import TIERS, Graph, Tier
from cgraph.spec.trust import Trust

if TYPE_CHECKING:
    from cgraph.backends.memory.background import BackgroundMemory
    from cgraph.diagnostics import Diagnostic
    from cgraph.runtime.ports import ChatModel, ExitChooser, SessionInfo, SessionStore
    from cgraph.runtime.state.records import Turn
    from cgraph.session import Session, Sessions

SEMANTIC = "semantic"
MAX_ID_CHARS = 200
"""Longest `--session` or `--user` id."""
DEFAULT_USER = "local"
LOCAL = Path(".cgraph")
"""Where memories and the input history live when `--store` names a database."""
PREPARING = (
    "preparing the embedding model for this machine, once (about a second; "
    "kept in the user's cache folder, $CGRAPH_CACHE to move it)"
)
SWITCH_HINT = (
    "for an LLM: --model gpt-4o-mini · --model ollama/llama3.2 · "
    "--model openai/<name> --api-base http://localhost:8080/v1"
)


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The options of `cgraph run`, as parsed from the command line."""

    graph: Path
    store: str | Path
    """A folder, or a database URL (`postgresql://…`) for the sessions alone."""
    model: str | None = None
    api_base: str | None = None
    user: str | None = None
    """None: the session's own user when resuming, else `local`."""
    session: str | None = None
    """Resume this session; a name not in the store starts a new session with it."""
    record: Path | None = None
    structured: str | None = None
    """`--structured`, `--timeout`, `--max-tokens`, `--retries`: None keeps the graph's."""
    timeout: float | None = None
    max_tokens: int | None = None
    retries: int | None = None
    trace: Path | None = None
    """Append the spans of every turn to this file (JSON lines)."""
    trust: Trust = field(default_factory=Trust)
    """What the graph may reach besides its folder (the environment's and the flags')."""
    limits: ReadLimits = field(default_factory=ReadLimits)
    """`--max-file-size`."""


def load_checked(
    path: Path,
    read: Callable[[Graph], None] = lambda graph: None,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> tuple[Graph, list[Diagnostic]]:
    """The graph and its offline hints, or `GraphError` with every located lint error
    (warnings do not stop a run). `read` sees the graph as soon as it is read, before
    the lint: what it starts in the background overlaps with the lint. The graph is
    loaded and linted with `trust` and `limits`."""
    from cgraph.spec.load import load_graph

    problem = not_a_graph_file(path)
    if problem:
        raise GraphError(f"error: {path}: {problem}")
    try:
        graph: Graph | None = load_graph(path, trust=trust, limits=limits)
    except GraphError:  # the lint below says where and why
        graph = None
    if graph is not None:
        read(graph)
    from cgraph.lint.gate import gate

    linted = gate(path, trust, limits)
    if linted.errors:
        message = f"{path}: the graph has errors; fix them and run again"
        raise GraphError(message, list(linted.errors))
    return graph or load_graph(path, trust=trust, limits=limits), list(linted.hints)


# ----- model --------------------------------------------------------------------------------


def build_model(graph: Graph, name: str, options: RunOptions) -> ChatModel | ExitChooser:
    """The chat model by name, with the graph's settings under the flags given; an unknown
    model or a missing key fails here, before the first turn."""
    from cgraph.wiring.models import resolve_model

    chat = resolve_model(
        name,
        graph.model,
        embedding_model=graph.embedding_source(),
        acts=graph.acts,
        api_base=options.api_base,
        structured=options.structured,
        timeout=options.timeout,
        max_tokens=options.max_tokens,
        retries=options.retries,
    )
    if options.record is not None:
        from cgraph.backends.llm.replay import recording

        try:
            chat = recording(chat, options.record)
        except OSError as err:
            raise ConfigError(cannot_write("--record", options.record, err)) from err
    return chat


def banner(name: str) -> str:
    """What the run says first about its model."""
    if name == SEMANTIC:
        return (
            "offline semantic mode: exits are chosen by a fitted model over embedding "
            "similarity (all-MiniLM-L6-v2), which asks when unsure, and replies are the "
            "graph's authored text — no LLM.\n" + SWITCH_HINT
        )
    return f"model: {name}"


# ----- session ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Opened:
    """Everything a run works with: the session and how to make a fresh one."""

    graph: Graph
    session: Session
    opener: Sessions
    """What opened the session (its store, memory and model), and opens the next one."""
    model_name: str
    memory: BackgroundMemory
    store: Path
    """The folder of memories and the input history (and of sessions, unless a URL)."""
    user: str
    notes: list[str] = field(default_factory=list)
    """What opening decided that the user should hear (a new session named by `--session`)."""
    memory_note_shown: bool = False
    later_warmed: bool = False
    first_turn_checked: bool = False

    @property
    def model(self) -> Any:
        return self.session.model

    @property
    def sessions(self) -> SessionStore:
        """The session store (a database's, or the folder's file)."""
        return self.session.store

    def reset(self) -> Session:
        """Close the session and start a new one on the same graph, model and memory."""
        self.session.close()
        self.session = self.opener.start(self.graph, model=self.model, user_id=self.user)
        return self.session

    def warm_later_turns(self) -> None:
        """Once the first reply is out, compile the prompt templates and (offline) embed
        the rest of the graph's texts in the background: while the user reads and types,
        not in a later turn. The start-up is over then (`cgraph.cli.started`)."""
        started()
        if self.later_warmed:
            return
        self.later_warmed = True
        from cgraph.runtime.ask.prompts import compile_shipped

        threading.Thread(target=compile_shipped, name="cgraph-templates", daemon=True).start()
        if self.model_name == SEMANTIC:
            from cgraph.backends.embed import shared_embedder
            from cgraph.backends.offline.warming import later_texts

            shared_embedder(self.graph.embedding_source()).prime(later_texts(self.graph))

    def stop_reason(self) -> str | None:
        """Why the run must stop after a turn: a replay that met a request it did not
        record, or a model call of the run's first turn that failed for good (a refused
        request, a bad key): every later turn would only fall back too."""
        inner = getattr(self.model, "inner", self.model)
        failure = getattr(inner, "failure", None)
        if failure:
            return str(failure)
        if self.first_turn_checked:
            return None
        self.first_turn_checked = True
        return permanent_failure(self.session)

    def warnings(self, turn: Turn) -> list[str]:
        """What the turn survived, each once; the memory store failing to open is reported
        once per run, since it turns every later recall into "no memories" without an event
        of its own."""
        found = list(turn.warnings)
        if self.memory.note and not self.memory_note_shown:
            self.memory_note_shown = True
            found.insert(0, self.memory.note)
        return [f"warning: {text} (the conversation goes on)" for text in found]


def permanent_failure(session: Session) -> str | None:
    """The error of the last turn's model call that failed for a lasting reason, if any."""
    for event in reversed(session.log.turn_events()):
        if event.kind == "llm_error" and event.data.get("permanent"):
            return str(event.data.get("error", ""))
    return None


def open_session(graph: Graph, options: RunOptions) -> Opened:
    """Check the store, the session and the model, then open the session."""
    from cgraph.wiring.models import choose
    from cgraph.wiring.stores import is_url, open_store

    for flag, value in (("--session", options.session), ("--user", options.user)):
        problem = text_problem(value, MAX_ID_CHARS, "an id") if value is not None else None
        if problem is not None:
            raise ConfigError(f"{flag}: the id {problem}")
    store = usable_folder(LOCAL if is_url(options.store) else Path(options.store))
    sessions = open_store(options.store if is_url(options.store) else store)
    if options.session:
        hold(sessions, options.session)
    stored = stored_session(sessions, options.session, options.user)
    name = choose(options.model or (stored.model if stored else None), graph.model)
    chat = build_model(graph, name, options)
    notes: list[str] = []
    if name == SEMANTIC and warm_up(graph):
        notes.append(PREPARING)
    # Imported after the model started loading in the background: the two overlap.
    from cgraph.backends.memory.background import BackgroundMemory, Reading
    from cgraph.session import Sessions

    user = stored.user_id if stored is not None else options.user or DEFAULT_USER
    reading = Reading(
        tiers=frozenset(recalls(graph)),
        session_id=stored.id if stored is not None else options.session,
        counts=counts_memories(graph),
    )
    memory = BackgroundMemory(
        graph.memory, store, graph.embedding_source(), user_id=user, reading=reading
    )
    # The terminal shows a reply first, then runs the memory hook (`Session.remember`).
    opener = Sessions(
        sessions, memory=memory, model=chat, api_base=options.api_base, remember="background"
    )
    if stored is not None:
        session = opener.resume(stored.id, graph=graph, user_id=stored.user_id)
    else:
        session = opener.start(graph, user_id=user, session_id=options.session)
        if options.session:
            notes.append(f"no session `{options.session}` in {store}: started it")
    return Opened(
        graph=graph,
        session=session,
        opener=opener,
        model_name=name,
        memory=memory,
        store=store,
        user=session.user_id,
        notes=notes,
    )


_WARMED: dict[int, tuple[Graph, bool]] = {}


def warm_up(graph: Graph) -> bool:
    """Start loading the offline chooser's embedding model in the background, then
    embedding the first turn's texts (once per graph); True when this run prepares the
    model for the machine first."""
    if id(graph) not in _WARMED:
        from cgraph.backends.embed import shared_embedder
        from cgraph.backends.offline.warming import first_turn_texts

        preparing = not graph.embedding_source() and onnx_needs_preparing()
        shared_embedder(graph.embedding_source()).prime(first_turn_texts(graph))
        _WARMED[id(graph)] = (graph, preparing)  # the graph held: its id stays its own
    return _WARMED[id(graph)][1]


def warm_up_early(graph: Graph, options: RunOptions) -> None:
    """`warm_up` as soon as the graph is read, when the run is surely offline with the
    default model: the lint, the checks and the runtime's imports then overlap with the
    model loading (a run that fails them ends at once all the same, `exit_now`)."""
    named = options.model or (None if options.session else graph.model.name)
    if (not named or named == SEMANTIC) and not graph.embedding_source():
        warm_up(graph)


def recalls(graph: Graph) -> set[Tier]:
    """The memory tiers the graph reads: its recall states' and included contexts."""
    found: set[Tier] = set()
    for state in graph.states.values():
        if state.type == "recall":
            found.update(state.tiers or TIERS)
        found.update(state.included_contexts)
    return found


def counts_memories(graph: Graph) -> bool:
    """True when the graph's start asks whether the user has memories (`has_memories`,
    `memory_count`): conditional entries that lead to more than one state."""
    entries = () if isinstance(graph.start, str) else graph.start
    return len({e.state for e in entries}) > 1


def onnx_needs_preparing() -> bool:
    from cgraph.backends.onnx_embed import needs_preparing

    return needs_preparing()


def usable_folder(store: Path) -> Path:
    """`--store`, created if needed; `ConfigError` when it cannot be a folder."""
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--store {store}: cannot use it as a folder ({err.strerror})") from err
    return store


_HELD: list[AbstractContextManager[object]] = []
"""Held until the process ends; a killed one's leases lapse (at once on one machine)."""


def hold(sessions: SessionStore, session_id: str) -> None:
    """Lock the session for this process (`SessionStore.hold`); `ConfigError` when another
    process runs it. Two processes writing one session would interleave their steps; the
    second is refused at once instead."""
    import atexit

    from cgraph.errors import SessionBusy

    held = sessions.hold(session_id, wait=0.0)
    try:
        held.__enter__()
    except SessionBusy:
        raise ConfigError(
            f"session `{session_id}` is open in another process; "
            "wait for that run to end, or start another session"
        ) from None
    _HELD.append(held)
    # Let go at a normal exit, so the next run need not wait for the lease to lapse.
    atexit.register(held.__exit__, None, None, None)


def stored_session(
    sessions: SessionStore, session_id: str | None, user: str | None
) -> SessionInfo | None:
    """The stored session `--session` names (None: a new one); refuses another user's."""
    from cgraph.errors import SessionNotFound

    if not session_id:
        return None
    try:
        found: SessionInfo | None = sessions.load(session_id).info
    except SessionNotFound:
        found = None
    if found is not None and user is not None and found.user_id != user:
        raise ConfigError(
            f"session `{session_id}` belongs to another user than `{user}`; "
            "resume it as its own user, or start a new session"
        )
    return found
