"""The library API of a running conversation (contract; the engine fills it in).

    graph = cgraph.load_graph("graphs/medical_checkin.yaml")
    session = Session.start(graph, model="semantic", user_id="ann", store=".cgraph")
    turn = session.send("Hi, I'm ready")
    turn.reply, turn.path, turn.transitions
    ...
    session = Session.resume(session.id, store=".cgraph", model="semantic")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cgraph.llm import ChatModel
from cgraph.memory import Memory, MemoryStore
from cgraph.model import Graph
from cgraph.records import Decision, Event, TransitionRecord, Turn


class Session:
    """One conversation with a graph, checkpointed at every step."""

    id: str
    user_id: str
    graph: Graph

    @classmethod
    def start(
        cls,
        graph: Graph | str | Path,
        *,
        model: ChatModel | str | None = None,
        user_id: str = "local",
        session_id: str | None = None,
        store: Any = None,
        memory: MemoryStore | None = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
    ) -> Session:
        """Start a new session. `store` is a `SessionStore`, a folder, or None (in memory).

        `model` is a `ChatModel`, a name for `cgraph.llm.resolve`, or None (the graph's
        `model.name`, else the offline semantic model).
        """
        raise NotImplementedError

    @classmethod
    def resume(
        cls,
        session_id: str,
        *,
        store: Any,
        model: ChatModel | str | None = None,
        memory: MemoryStore | None = None,
        graph: Graph | str | Path | None = None,
        api_base: str | None = None,
        clock: Callable[[], float] | None = None,
    ) -> Session:
        """Continue a stored session from its last committed step (the graph file is
        re-read from the path recorded at start unless `graph` is given)."""
        raise NotImplementedError

    def send(self, message: str) -> Turn:
        """Run one user turn; raises `SessionCompleted` after END."""
        raise NotImplementedError

    def undo(self) -> Turn | None:
        """Take back the last turn (state, variables, notes, transcript); returns it."""
        raise NotImplementedError

    @property
    def state(self) -> str:
        """The current state's qualified id."""
        raise NotImplementedError

    @property
    def completed(self) -> bool:
        raise NotImplementedError

    @property
    def turn_number(self) -> int:
        raise NotImplementedError

    @property
    def variables(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def notes(self) -> list[str]:
        """Reflection notes (internal; never shown to the user as replies)."""
        raise NotImplementedError

    @property
    def transcript(self) -> list[dict[str, str]]:
        """`{"role": "user"|"assistant", "content": ...}` messages."""
        raise NotImplementedError

    @property
    def audit(self) -> list[TransitionRecord]:
        raise NotImplementedError

    @property
    def last_decisions(self) -> list[Decision]:
        raise NotImplementedError

    def events(self) -> list[Event]:
        """The append-only event log."""
        raise NotImplementedError

    def memories(self, query: str | None = None) -> list[Memory]:
        """This user's memories, or those most similar to `query`."""
        raise NotImplementedError
