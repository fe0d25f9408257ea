"""The session's side of memory: recall into a step, extract after a turn, never fail one.

Every call to the memory store goes through `MemoryGateway._attempt`, the one failure
path: whatever the store raises becomes a `memory_error` event and the conversation goes
on without memories. The gateway only returns events; the engine logs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cgraph.runtime.needs import Offload, Steps
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory, NullMemory
from cgraph.runtime.state.outcomes import Emit
from cgraph.spec.model import TIERS, MemoryConfig, Tier
from cgraph.spec.names import START

T = TypeVar("T")


def memory_view(memory: Memory) -> dict[str, Any]:
    """A recalled or stored memory as the log and the prompts show it."""
    return {"id": memory.id, "text": memory.text, "tier": memory.tier, "score": memory.score}


class MemoryGateway:
    """One user's memories as a session uses them; see the module docstring."""

    def __init__(
        self, store: MemoryStore, config: MemoryConfig, *, user_id: str, session_id: str
    ) -> None:
        self.store, self.config = store, config
        self.user_id, self.session_id = user_id, session_id
        self.off = isinstance(store, NullMemory)

    def recall(
        self, here: str, queries: Sequence[str], tiers: Sequence[str], top_k: int
    ) -> Steps[Recalled]:
        """Query the store for this user; the event records what came back, with scores."""
        if self.off:
            return Recalled((), ())
        wanted: tuple[Tier, ...] = tuple(t for t in TIERS if t in tiers)
        found, failed = yield from self._attempt(
            "recall",
            lambda: self.store.recall(
                self.user_id,
                list(queries),
                tiers=wanted,
                top_k=top_k,
                min_score=self.config.min_score,
                session_id=self.session_id,
            ),
            state=here,
        )
        if failed is not None:
            return Recalled((), (failed,))
        views = tuple(memory_view(m) for m in found or ())
        return Recalled(views, (Emit("recall", _recall_data(here, queries, wanted, views)),))

    def metadata(self) -> Steps[tuple[dict[str, Any], tuple[Emit, ...]]]:
        """What a conditional start may know about the user: whether memories exist."""
        if self.off:
            return {"has_memories": False, "memory_count": 0}, ()
        count, failed = yield from self._attempt(
            "count", lambda: self.store.count(self.user_id), state=START
        )
        number = count or 0
        events = (failed,) if failed is not None else ()
        return {"has_memories": number > 0, "memory_count": number}, events

    def wants_extraction(self, completed: bool) -> bool:
        """`memory.store`: after every turn (default), once when the session ends, or never."""
        mode = self.config.store
        if self.off or mode == "off":
            return False
        return mode == "every_turn" or completed

    def store_extracted(
        self,
        found: Sequence[tuple[Tier, str]] | None,
        calls: int,
        failures: Sequence[Emit],
        here: str,
        turn: int,
    ) -> Steps[tuple[Emit, ...]]:
        """Store what an extraction found (None: no usable answer, after `calls` calls and
        their `failures`); the events say what happened."""
        if found is None:  # the last attempt's error says why, once
            said = [f.data["error"] for f in failures if f.kind == "llm_error"]
            why = said[-1] if said else "no usable answer"
            error = {"operation": "extract", "error": why, "calls": calls}
            return (*failures, Emit("memory_error", error))
        items = [NewMemory(text, tier, self.session_id, here, turn) for tier, text in found]
        stored, not_stored = yield from self._attempt(
            "add", lambda: self.store.add(self.user_id, items) if items else [], calls=calls
        )
        if not_stored is not None:
            return (*failures, not_stored)
        views = [memory_view(m) for m in stored or ()]
        return (*failures, Emit("memory_stored", {"calls": calls, "memories": views}))

    def already_stored(self, turn: int) -> Steps[tuple[Emit, ...] | None]:
        """After a crash between storing turn `turn`'s memories and logging it: the
        `memory_stored` event for what the store already holds from that turn (the
        memories keep their session and turn), so they are not extracted twice; None
        when it holds none (the extraction never reached the store: ask again)."""
        found, failed = yield from self._attempt("list", lambda: self.store.list(self.user_id))
        if failed is not None:
            return None  # asking again is safe: the store's duplicate check keeps one
        mine = [m for m in found or () if m.session_id == self.session_id and m.turn == turn]
        if not mine:
            return None
        views = [memory_view(m) for m in mine]
        return (Emit("memory_stored", {"calls": 0, "memories": views, "recovered": True}),)

    def forget(self, ids: Sequence[str]) -> Steps[tuple[Emit, ...]]:
        """Delete memories an undone turn stored (undo still works if the store is down)."""
        if not ids:
            return ()
        _, failed = yield from self._attempt(
            "delete", lambda: self.store.delete(self.user_id, list(ids))
        )
        return (failed,) if failed is not None else ()

    def _attempt(
        self, operation: str, call: Callable[[], T], **data: Any
    ) -> Steps[tuple[T | None, Emit | None]]:
        """The one failure path: the store's answer, or None and a `memory_error` event
        (the call is a need: the async driver runs it off the event loop)."""
        try:
            return (yield Offload(call, "memory")), None
        except Exception as err:  # memory must never take a conversation down
            error = getattr(err, "message", None) or f"{type(err).__name__}: {err}"
            return None, Emit("memory_error", {**data, "operation": operation, "error": error})


def _recall_data(
    here: str, queries: Sequence[str], tiers: Sequence[str], views: Sequence[Any]
) -> dict[str, Any]:
    return {"state": here, "queries": list(queries), "tiers": list(tiers), "memories": list(views)}


def this_turn(transcript: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """The messages of the newest turn: the user's message and the replies after it (read
    from the end: a long conversation's earlier messages are not read)."""
    found: list[dict[str, str]] = []
    for message in reversed(transcript):
        found.append(message)
        if message["role"] == "user":
            break
    return found[::-1]


@dataclass(frozen=True, slots=True)
class Recalled:
    """Memories found for a step (as the prompt shows them) and the log entries saying so."""

    memories: tuple[Mapping[str, Any], ...]
    events: tuple[Emit, ...]
