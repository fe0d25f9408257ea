"""What a running session is made of besides its state: graph, model, stores, clock, ids."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cgraph.runtime.ports import (
    Announcer,
    ChatModel,
    ExitChooser,
    MemoryStore,
    Rememberer,
    SessionStore,
    Summariser,
)
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.spec.model import Graph


@dataclass(frozen=True, slots=True)
class Dependencies:
    """Built once by `Session` and handed to its `Engine`."""

    graph: Graph
    chooser: ExitChooser
    """Chooses the exits: the offline chooser, or `ask.choosing.ModelChooser` over `chat`."""
    chat: ChatModel | None
    """The language model, when there is one (its summaries, memory extraction, streaming
    and turn deadline); None offline."""
    memory: MemoryStore
    store: SessionStore
    clock: Callable[[], float]
    session_id: str
    user_id: str
    tools: ToolRunner = field(default_factory=ToolRunner)
    """The session's tool workers."""
    rememberer: Rememberer | None = None
    """What picks memories without a language model (offline); None: `chat` is asked."""
    summariser: Summariser | None = None
    """What writes the running summary when `chat` writes none (offline) or fails."""
    announce: Announcer | None = None
    """What the session's start and each committed turn send out (webhooks), written to
    the store's outbox with them; None: nothing."""

    @property
    def model(self) -> ChatModel | ExitChooser:
        """The model the session runs with, as a user named it."""
        return self.chat if self.chat is not None else self.chooser
