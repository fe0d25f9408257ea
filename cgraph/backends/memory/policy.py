"""The recall interface the engine talks to, and the empty store used when memory is off.

The Chroma-backed store (`cgraph.backends.memory.chroma`) implements `MemoryStore`; a session
treats any failure of the store as "no memories this time" and logs it as an event
(`cgraph.runtime.memory.gateway.MemoryGateway`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cgraph.backends.embed import Vector, cosine
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory
from cgraph.spec.model import Tier

SESSION_TIERS: frozenset[Tier] = frozenset({"task"})
"""Tiers whose memories belong to the session that stored them (the `task` tier is "this
session's context"): a session recalls only its own. The other tiers are the user's,
recalled by every session of that user, whatever its graph."""


def visible(memory: Memory, session_id: str | None) -> bool:
    """True when a session (`session_id`; None: no session, e.g. `cgraph memory`) may see
    the memory: any of the user's, except another session's task context."""
    return session_id is None or memory.tier not in SESSION_TIERS or memory.session_id == session_id


def scope(tier: Tier, session_id: str) -> tuple[Tier, str]:
    """Where a memory is compared for duplicates: its tier, and its session for a tier
    that belongs to one (a fact told in two sessions is two sessions' context)."""
    return tier, session_id if tier in SESSION_TIERS else ""


class ForwardingMemory:
    """Passes every call to the store `target()` returns; subclasses change what differs."""

    def target(self) -> MemoryStore:
        raise NotImplementedError

    def recall(
        self,
        user_id: str,
        queries: Sequence[str],
        *,
        tiers: Sequence[Tier] = (),
        top_k: int = 5,
        min_score: float | None = None,
        session_id: str | None = None,
    ) -> list[Memory]:
        store = self.target()
        return store.recall(
            user_id, queries, tiers=tiers, top_k=top_k, min_score=min_score, session_id=session_id
        )

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return self.target().add(user_id, items)

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        return self.target().list(user_id, tiers=tiers, session_id=session_id)

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return self.target().delete(user_id, ids)

    def count(self, user_id: str) -> int:
        return self.target().count(user_id)


class ReadOnlyMemory(ForwardingMemory):
    """Recalls from another store but stores nothing: a graph's `memory: {store: off}`."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner

    def target(self) -> MemoryStore:
        return self.inner

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return []


def normalized(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".!")


def best(memories: Sequence[Memory], top_k: int, min_score: float | None) -> list[Memory]:
    """The `top_k` highest-scoring distinct memories at or above `min_score`, best first."""
    top: dict[str, Memory] = {}
    for m in memories:
        if min_score is not None and (m.score or 0.0) < min_score:
            continue
        if m.id not in top or (m.score or 0.0) > (top[m.id].score or 0.0):
            top[m.id] = m
    ranked = sorted(top.values(), key=lambda m: (-(m.score or 0.0), -m.created_at, m.id))
    return ranked[:top_k]


def export_dict(memory: Memory) -> dict[str, Any]:
    """A memory as JSON-able data (no score: it belongs to one recall)."""
    data = asdict(memory)
    data.pop("score")
    return data


# --- policies shared by every store: retention and duplicates, as pure functions --------

DAY = 86_400.0


def expired(memory: Memory, ttl_days: Mapping[Tier, float], now: float) -> bool:
    """True when the memory's tier has a time-to-live and it has run out."""
    days = ttl_days.get(memory.tier)
    return days is not None and memory.created_at < now - days * DAY


def over_cap(memories: Iterable[Memory], max_items: Mapping[Tier, int]) -> list[str]:
    """Ids of the memories beyond each tier's cap (one user's); the oldest go first."""
    newest_first = sorted(memories, key=lambda m: (-m.created_at, m.id))
    over: list[str] = []
    for tier, cap in max_items.items():
        over += [m.id for m in newest_first if m.tier == tier][cap:]
    return over


Nearest = tuple[str, float, str] | None
"""The stored memory most similar to a new one: (id, similarity, text), or None."""


@dataclass(frozen=True, slots=True)
class Write:
    """What storing one new memory comes to: a new id, or the id of the one it replaces."""

    id: str
    item: NewMemory
    vector: Vector
    replaces: bool


def plan_writes(
    items: Sequence[NewMemory],
    vectors: Sequence[Vector],
    nearest: Sequence[Nearest],
    *,
    threshold: float,
    new_id: Callable[[], str],
) -> list[Write]:
    """Per new memory (with its vector and nearest stored memory in its `scope`):

    - the same text as the nearest one (ignoring case and spacing): nothing to write;
    - similar above `threshold` (reworded, or updated like "25 km" → "30 km"): it replaces
      the stored one, keeping its id;
    - otherwise a new memory. Two similar items in one batch (and `scope`): the later one
      wins.
    """
    writes: dict[str, Write] = {}
    for item, vector, near in zip(items, vectors, nearest, strict=True):
        here = scope(item.tier, item.session_id)
        twin = next(
            (
                w
                for w in writes.values()
                if scope(w.item.tier, w.item.session_id) == here
                and cosine(w.vector, vector) >= threshold
            ),
            None,
        )
        if twin is not None:
            writes[twin.id] = Write(twin.id, item, vector, twin.replaces)
        elif near is not None and near[1] >= threshold:
            if normalized(near[2]) != normalized(item.text):
                writes[near[0]] = Write(near[0], item, vector, replaces=True)
        else:
            new = Write(item.id or new_id(), item, vector, replaces=False)
            writes[new.id] = new
    return list(writes.values())
