"""What a running session is made of besides its state: graph, model, stores, clock, ids."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cgraph.runtime.ports import ChatModel, MemoryStore, SessionStore
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.spec.model import Graph


@dataclass(frozen=True, slots=True)
class Dependencies:
    """Built once by `Session` and handed to its `Engine`."""

    graph: Graph
    model: ChatModel
    memory: MemoryStore
    store: SessionStore
    clock: Callable[[], float]
    session_id: str
    user_id: str
    tools: ToolRunner = field(default_factory=ToolRunner)
    """The session's tool workers."""
