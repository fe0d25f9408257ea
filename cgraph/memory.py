"""The recall interface the engine talks to, and the empty store used when memory is off.

The Chroma-backed store (`cgraph.chroma_memory`) implements `MemoryStore`; the engine
treats any `MemoryStoreError` as "no memories this time" and logs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cgraph.model import Tier


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Something worth remembering, before it is stored."""

    text: str
    tier: Tier
    session_id: str = ""
    state: str = ""
    turn: int = 0


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
    ) -> list[Memory]:
        """Memories of `user_id` most similar to any query, best first; empty tiers = all."""
        ...

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        """Store new memories, skipping near-duplicates; returns what was stored."""
        ...

    def list(self, user_id: str, *, tiers: Sequence[Tier] = ()) -> list[Memory]: ...

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        """Delete some (or, with `ids=None`, all) of a user's memories; returns how many."""
        ...

    def count(self, user_id: str) -> int: ...


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
    ) -> list[Memory]:
        return []

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return []

    def list(self, user_id: str, *, tiers: Sequence[Tier] = ()) -> list[Memory]:
        return []

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return 0
