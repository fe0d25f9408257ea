"""Opening a run: the options of `cgraph run`, checked in order, then the session.

Everything that can be refused cheaply is checked before anything heavy is imported or
started: the store folder, the graph, the session (its owner), then the model and its
credentials. Only then do the embedding model and the memory store start loading in the
background, so an error is printed and the process exits at once (no thread is left
importing torch or chromadb while the interpreter shuts down).

The model is `--model`, else the model the session was started with, else the graph's
`model.name` when its credentials are present, else the offline semantic mode.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cgraph.errors import ConfigError, GraphError
from cgraph.spec.model import Graph

if TYPE_CHECKING:
    from cgraph.backends.llm.types import ChatModel
    from cgraph.backends.memory.background import BackgroundMemory
    from cgraph.diagnostics import Diagnostic
    from cgraph.runtime.records import Turn
    from cgraph.runtime.session import Session
    from cgraph.runtime.store import SessionInfo

SEMANTIC = "semantic"
DEFAULT_USER = "local"
# Where a provider keeps its key; a name not listed here is checked by litellm itself.
_KEYS = {
    "openai": "OPENAI_API_KEY",
    "gpt": "OPENAI_API_KEY",
    "o1": "OPENAI_API_KEY",
    "o3": "OPENAI_API_KEY",
    "o4": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "claude": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
}
_LOCAL_PROVIDERS = ("ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm")
SWITCH_HINT = (
    "for an LLM: --model gpt-4o-mini · --model ollama/llama3.2 · "
    "--model openai/<name> --api-base http://localhost:8080/v1"
)


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The options of `cgraph run`, as parsed from the command line."""

    graph: Path
    store: Path
    model: str | None = None
    api_base: str | None = None
    user: str | None = None
    """None: the session's own user when resuming, else `local`."""
    session: str | None = None
    """Resume this session; a name not in the store starts a new session with it."""
    record: Path | None = None


def load_checked(path: Path) -> tuple[Graph, list[Diagnostic]]:
    """The graph and its offline hints, or `GraphError` with every located lint error
    (warnings do not stop a run)."""
    from cgraph.diagnostics import Severity
    from cgraph.lint.offline import check_say
    from cgraph.lint.walk import CHECKS, lint_paths
    from cgraph.spec.load import load_graph

    if not path.is_file():
        raise GraphError(f"error: {path}: no such file")
    found = lint_paths([path], checks=(*CHECKS, check_say)).diagnostics
    errors = [d for d in found if d.severity is Severity.ERROR]
    if errors:
        raise GraphError(f"{path}: the graph has errors; fix them and run again", errors)
    return load_graph(path), [d for d in found if d.code == "no-say"]


def offline_hints(hints: list[Diagnostic], shown: int = 3) -> str:
    """The `say:` hints of an offline run, a few located ones and a count of the rest."""
    lines = [f"hint: {d.file}:{d.line}:{d.column} {d.message}; {d.hint}\n" for d in hints[:shown]]
    if len(hints) > shown:
        lines.append(f"hint: … and {len(hints) - shown} more action states without `say:`\n")
    return "".join(lines)


# ----- model --------------------------------------------------------------------------------


def model_name(given: str | None, graph: Graph) -> str:
    """`--model`, else the graph's model when its credentials exist, else `semantic`."""
    if given:
        return given
    wanted = graph.model.name
    if wanted and has_credentials(wanted, graph.model.api_base):
        return wanted
    return SEMANTIC


def has_credentials(name: str, api_base: str | None = None) -> bool:
    """True when the provider of `name` is local, given a base URL, or has its key set."""
    provider = name.split("/", 1)[0] if "/" in name else name.split("-", 1)[0]
    if provider in _LOCAL_PROVIDERS or api_base:
        return True
    key = _KEYS.get(provider)
    if key is not None:
        return bool(os.environ.get(key))
    try:  # an unusual provider: only litellm knows its variables
        from cgraph.backends.llm.litellm_chat import load_litellm

        found = load_litellm().validate_environment(model=name)
        return bool(found.get("keys_in_environment"))
    except Exception:  # a name litellm cannot place has no known keys: run `semantic`
        return False


def missing_key(name: str, api_base: str | None) -> str | None:
    """The variable a named provider model needs and does not have, if any.

    Only providers whose key is known are checked here (no litellm import); the others
    are checked by litellm on the first call.
    """
    from cgraph.backends.llm.types import known_prefixes

    if name == SEMANTIC or name.partition(":")[0] in known_prefixes() or api_base:
        return None
    provider = name.split("/", 1)[0] if "/" in name else name.split("-", 1)[0]
    key = _KEYS.get(provider)
    return key if key is not None and not os.environ.get(key) else None


def build_model(name: str, graph: Graph, api_base: str | None, record: Path | None) -> ChatModel:
    """The chat model by name; an unknown provider model fails here, before the first turn."""
    from cgraph.runtime.session import resolve_model

    chat = resolve_model(name, graph, api_base)
    validate = getattr(chat, "validate", None)
    if callable(validate):
        validate()
    if record is not None:
        from cgraph.backends.llm.replay import RecordingModel

        chat = RecordingModel(chat, record)
    return chat


def banner(name: str) -> str:
    """What the run says first about its model."""
    if name == SEMANTIC:
        return (
            "offline semantic mode: exits are chosen by embedding similarity "
            "(all-MiniLM-L6-v2) and replies are the graph's authored text — no LLM.\n" + SWITCH_HINT
        )
    return f"model: {name}"


# ----- session ------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Opened:
    """Everything a run works with: the session and how to make a fresh one."""

    graph: Graph
    session: Session
    model_name: str
    memory: BackgroundMemory
    store: Path
    user: str
    notes: list[str] = field(default_factory=list)
    """What opening decided that the user should hear (a new session named by `--session`)."""
    memory_note_shown: bool = False

    @property
    def model(self) -> Any:
        return self.session.model

    def reset(self) -> Session:
        """Close the session and start a new one on the same graph, model and memory."""
        from cgraph.runtime.session import Session

        self.session.close()
        self.session = Session.start(
            self.graph, model=self.model, user_id=self.user, store=self.store, memory=self.memory
        )
        return self.session

    def replay_failure(self) -> str | None:
        """A replay that met a request it did not record (the engine fell back on it)."""
        inner = getattr(self.model, "inner", self.model)
        failure = getattr(inner, "failure", None)
        return str(failure) if failure else None

    def warnings(self, turn: Turn) -> list[str]:
        """What the turn survived, each once; the memory store failing to open is reported
        once per run, since it turns every later recall into "no memories" without an event
        of its own."""
        found = list(turn.warnings)
        if self.memory.note and not self.memory_note_shown:
            self.memory_note_shown = True
            found.insert(0, self.memory.note)
        return [f"warning: {text} (the conversation goes on)" for text in found]


def open_session(graph: Graph, options: RunOptions) -> Opened:
    """Check the store, the session and the model, then open the session."""
    from cgraph.backends.memory.background import BackgroundMemory
    from cgraph.runtime.session import Session

    store = usable_folder(options.store)
    if options.session:
        hold(store, options.session)
    stored = stored_session(store, options.session, options.user)
    name = model_name(options.model or (stored.model if stored else None), graph)
    key = missing_key(name, options.api_base or graph.model.api_base)
    if key is not None:
        raise ConfigError(f"model `{name}` needs an API key: set {key} (or pass --api-base)")
    chat = build_model(name, graph, options.api_base, options.record)
    if name == SEMANTIC:
        from cgraph.backends.embed import shared_embedder

        shared_embedder(graph.embedding_source())  # starts loading it in the background now
    memory = BackgroundMemory(graph.memory, store, graph.embedding_source())
    notes = []
    if stored is not None:
        session = Session.resume(
            stored.id,
            store=store,
            model=chat,
            memory=memory,
            graph=graph,
            api_base=options.api_base,
            user_id=stored.user_id,
        )
    else:
        user = options.user or DEFAULT_USER
        session = Session.start(
            graph, model=chat, user_id=user, store=store, memory=memory, session_id=options.session
        )
        if options.session:
            notes.append(f"no session `{options.session}` in {store}: started it")
    return Opened(
        graph=graph,
        session=session,
        model_name=name,
        memory=memory,
        store=store,
        user=session.user_id,
        notes=notes,
    )


def usable_folder(store: Path) -> Path:
    """`--store`, created if needed; `ConfigError` when it cannot be a folder."""
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--store {store}: cannot use it as a folder ({err.strerror})") from err
    return store


_HELD: list[IO[bytes]] = []  # open until the process ends, which releases their locks


def hold(store: Path, session_id: str) -> None:
    """Lock the session for this process; `ConfigError` when another process runs it.

    Two processes writing one session would interleave their steps; the second is refused
    at once instead. The lock is an OS file lock, so a killed process never leaves it held.
    """
    try:
        import fcntl
    except ImportError:  # no POSIX locks: the store still refuses a second writer's step
        return
    folder = store / "locks"
    try:
        folder.mkdir(exist_ok=True)
        handle = (folder / f"{_file_name(session_id)}.lock").open("ab")
    except OSError as err:
        raise ConfigError(f"--store {store}: cannot lock the session ({err.strerror})") from err
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise ConfigError(
            f"session `{session_id}` is open in another process; "
            "wait for that run to end, or start another session"
        ) from None
    _HELD.append(handle)


def _file_name(session_id: str) -> str:
    """A session id as a safe file name (ids are free text)."""
    import hashlib

    return hashlib.sha256(session_id.encode()).hexdigest()[:24]


def stored_session(store: Path, session_id: str | None, user: str | None) -> SessionInfo | None:
    """The stored session `--session` names (None: a new one); refuses another user's."""
    from cgraph.runtime.store import open_store

    if not session_id:
        return None
    sessions = open_store(store)
    try:
        found = next((s for s in sessions.sessions() if s.id == session_id), None)
    finally:
        sessions.close()
    if found is not None and user is not None and found.user_id != user:
        raise ConfigError(
            f"session `{session_id}` belongs to another user than `{user}`; "
            "resume it as its own user, or start a new session"
        )
    return found
