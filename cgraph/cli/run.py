"""`cgraph run`: open a session on a graph and talk with it, interactively or from stdin.

The model is `--model`, else the graph's `model.name` when its credentials are present,
else the offline semantic mode. Memory opens in a background thread (Chroma and the
embedding model take seconds to load) so the prompt appears at once; the first turn waits
for it if it must. litellm is imported only when a provider model is used.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cgraph.backends.memory.policy import ForwardingMemory, MemoryStore, NullMemory
from cgraph.errors import CgraphError, GraphError
from cgraph.spec.model import Graph, MemoryConfig

if TYPE_CHECKING:
    from cgraph.backends.llm.types import ChatModel
    from cgraph.runtime.records import Turn
    from cgraph.runtime.session import Session

SEMANTIC = "semantic"
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


def run_command(
    graph: Path,
    model: str | None,
    api_base: str | None,
    user: str,
    session: str | None,
    store: Path,
    jsonl: bool,
    record: Path | None,
) -> int:
    """The `run` command; returns the exit code."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        spec = load_checked(graph)
    except GraphError as err:
        sys.stderr.write(str(err) + "\n")
        return 1
    interactive = sys.stdin.isatty() and not jsonl
    try:
        opened = open_session(spec, model, api_base, user, session, store, record)
    except CgraphError as err:
        sys.stderr.write(f"error: {err.message}\n")
        return 1
    if interactive:
        from cgraph.cli.repl import Repl

        return Repl(opened).loop()
    return run_lines(opened, sys.stdin, sys.stdout, sys.stderr, jsonl=jsonl)


def load_checked(path: Path) -> Graph:
    """The graph, or `GraphError` with every located lint error (warnings do not stop a run)."""
    from cgraph.diagnostics import Severity
    from cgraph.lint.walk import lint_file
    from cgraph.spec.load import load_graph

    if not path.is_file():
        raise GraphError(f"error: {path}: no such file")
    errors = [d for d in lint_file(path) if d.severity is Severity.ERROR]
    if errors:
        raise GraphError(f"{path}: the graph has errors; fix them and run again", errors)
    return load_graph(path)


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


def build_model(name: str, graph: Graph, api_base: str | None, record: Path | None) -> ChatModel:
    from cgraph.runtime.session import resolve_model

    chat = resolve_model(name, graph, api_base)
    validate = getattr(chat, "validate", None)
    if callable(validate):  # a provider model: an unknown name fails before the first turn
        validate()
    if record is not None:
        from cgraph.backends.llm.replay import RecordingModel

        chat = RecordingModel(chat, record)
    return chat


def banner(name: str) -> str:
    if name == SEMANTIC:
        return (
            "offline semantic mode: exits are chosen by embedding similarity "
            "(all-MiniLM-L6-v2) and replies are the graph's authored text — no LLM.\n" + SWITCH_HINT
        )
    return f"model: {name}"


# ----- memory -------------------------------------------------------------------------------


class BackgroundMemory(ForwardingMemory):
    """A `MemoryStore` opened in a thread; calls wait for it, failures fall back to none."""

    def __init__(self, config: MemoryConfig, folder: Path) -> None:
        self._store: MemoryStore = NullMemory()
        self.note = ""
        self._ready = threading.Event()
        thread = threading.Thread(
            target=self._open, args=(config, folder), name="cgraph-memory", daemon=True
        )
        thread.start()

    def _open(self, config: MemoryConfig, folder: Path) -> None:
        try:
            from cgraph.backends.embed import shared_embedder
            from cgraph.backends.memory.chroma import open_memory

            self._store = open_memory(config, folder, embedder=shared_embedder(), connect=True)
        except ImportError as err:
            self.note = f"memory is off ({err})"
        except Exception as err:  # the conversation works without memory
            self.note = f"memory is off: {err}"
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def target(self) -> MemoryStore:
        self._ready.wait()
        return self._store


# ----- session ------------------------------------------------------------------------------


class Opened:
    """Everything a run works with: the session and how to make a fresh one."""

    def __init__(
        self, graph: Graph, session: Session, model_name: str, memory: BackgroundMemory,
        store: Path, user: str,
    ) -> None:  # fmt: skip
        self.graph, self.session, self.model_name = graph, session, model_name
        self.memory, self.store, self.user = memory, store, user
        self.memory_note_shown = False

    @property
    def model(self) -> Any:
        return self.session.model

    def reset(self) -> Session:
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


def open_session(
    graph: Graph, model: str | None, api_base: str | None, user: str, session_id: str | None,
    store: Path, record: Path | None,
) -> Opened:  # fmt: skip
    from cgraph.errors import ConfigError
    from cgraph.runtime.session import Session

    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--store {store}: cannot use it as a folder ({err.strerror})") from err
    name = model or (stored_model(store, session_id) if session_id else None)
    name = model_name(name, graph)
    if name == SEMANTIC:
        from cgraph.backends.embed import shared_embedder

        shared_embedder()  # starts loading the model in the background now
    chat = build_model(name, graph, api_base, record)
    memory = BackgroundMemory(graph.memory, store)
    if session_id:
        session = Session.resume(
            session_id, store=store, model=chat, memory=memory, graph=graph, api_base=api_base
        )
    else:
        session = Session.start(graph, model=chat, user_id=user, store=store, memory=memory)
    return Opened(graph, session, name, memory, store, session.user_id)


def stored_model(store: Path, session_id: str) -> str | None:
    from cgraph.errors import SessionNotFound
    from cgraph.runtime.session import Session

    for info in Session.list_sessions(store):
        if info.id == session_id:
            return info.model or None
    raise SessionNotFound(f"no session `{session_id}` in {store} (see `/sessions`)")


# ----- memory warnings ----------------------------------------------------------------------


def turn_warnings(opened: Opened, turn: Turn) -> list[str]:
    """What the turn survived, each once; the memory store failing to open is reported once
    per run, since it turns every later recall into "no memories" without an event of its own.
    """
    found = list(turn.warnings)
    if opened.memory.note and not opened.memory_note_shown:
        opened.memory_note_shown = True
        found.insert(0, opened.memory.note)
    return [f"warning: {text} (the conversation goes on)" for text in found]


# ----- non-interactive ----------------------------------------------------------------------


def turn_json(turn: Turn) -> dict[str, Any]:
    """One line of `--jsonl`."""
    return {
        "user": turn.user,
        "reply": turn.reply,
        "path": list(turn.path),
        "transitions": [
            {"from": t.from_state, "to": t.to_state, "exit": t.exit_id, "reason": t.reason}
            for t in turn.transitions
        ],
        "state": turn.state,
        "recalled": [m.model_dump() for m in turn.recalled],
        "session": turn.session,
        "completed": turn.completed,
    }


def run_lines(opened: Opened, lines: TextIO, out: TextIO, err: TextIO, *, jsonl: bool) -> int:
    """One user message per line; replies (or JSON objects) on `out`, notes on `err`."""
    err.write(banner(opened.model_name) + "\n")
    err.write(f"session {opened.session.id}\n")
    for raw in lines:
        message = raw.strip()
        if not message:
            continue
        if message in ("/quit", "/exit"):
            break
        if message == "/back":
            opened.session.undo()
            continue
        try:
            turn = opened.session.send(message)
        except CgraphError as error:  # a completed session, a broken store or script
            err.write(f"error: {error.message}\n")
            return 1
        failure = opened.replay_failure()
        if failure:
            err.write(f"error: {failure}\n")
            return 1
        line = json.dumps(turn_json(turn), ensure_ascii=False) if jsonl else turn.reply
        if line:  # the turn that reaches END may have nothing left to say
            out.write(line + "\n")
            out.flush()
        for warning in turn_warnings(opened, turn):
            err.write(warning + "\n")
    return 0
