"""The recall interface the engine talks to, and the empty store used when memory is off.

The Chroma-backed store (`cgraph.backends.memory.chroma`) implements `MemoryStore`; a session
treats any failure of the store as "no memories this time" and logs it as an event
(`cgraph.runtime.memory.MemoryGateway`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from cgraph.backends.embed import Vector, cosine
from cgraph.spec.model import Tier


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Something worth remembering, before it is stored."""

    text: str
    tier: Tier
    session_id: str = ""
    state: str = ""
    turn: int = 0
    id: str = ""
    """The id to store it under when it is new ("": a fresh one); set for a memory that
    waited in the outbox (`cgraph.backends.memory.pending`) under the id it was given."""
    created_at: float = 0.0
    """When it was said (0: when it is stored)."""


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory; `score` is the similarity when it was recalled."""

    id: str
    text: str
    tier: Tier
    user_id: str
    session_id: str
    state: str
    turn: int
    created_at: float
    score: float | None = None


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


@runtime_checkable
class MemoryStore(Protocol):
    """Per-user memories, searched by meaning. One user's memories never reach another."""

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
        """Memories of `user_id` most similar to any query, best first; empty tiers = all.
        With `session_id`, what that session may recall (`visible`): the task tier holds
        only its own memories."""
        ...

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        """Store new memories, skipping near-duplicates; returns what was stored."""
        ...

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        """A user's memories (only `tiers`, when given; with `session_id`, only those that
        session may see), oldest first."""
        ...

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        """Delete some (or, with `ids=None`, all) of a user's memories; returns how many."""
        ...

    def count(self, user_id: str) -> int:
        """How many memories `user_id` has."""
        ...


class NullMemory:
    """Remembers nothing: the store used when memory is off."""

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
        return []

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return []

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        return []

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return 0


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
