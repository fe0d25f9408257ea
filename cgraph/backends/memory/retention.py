"""Retention: expired memories (per-tier `ttl_days`) deleted, and each user's newest kept
under the per-tier `max_items`; for one user on every store, for everyone now and then."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cgraph.backends.memory.layout import RECORD, owner_key, records
from cgraph.backends.memory.places import Handles
from cgraph.backends.memory.policy import DAY, expired, over_cap
from cgraph.runtime.ports import Memory
from cgraph.spec.model import Tier


class Retention:
    """What a Chroma store deletes of its own accord, through its `Handles`."""

    def __init__(
        self,
        handles: Handles,
        ttl_days: Mapping[Tier, float],
        max_items: Mapping[Tier, int],
        clock: Callable[[], float],
        interval: float = 3600.0,
    ) -> None:
        self.handles, self.ttl_days, self.max_items = handles, ttl_days, max_items
        self.clock, self.interval = clock, interval
        self._last_full = float("-inf")

    def expired(self, m: Memory) -> bool:
        return expired(m, self.ttl_days, self.clock())

    def prune_user(self, user_id: str) -> int:
        now = self.clock()
        gone: list[str] = []
        for tier, days in self.ttl_days.items():
            old = {"created_at": {"$lt": now - days * DAY}}
            where = {"$and": [{"owner": owner_key(user_id, tier)}, old]}
            gone += self.handles.get(user_id, where=where, include=[])["ids"]
        return self.handles.delete(user_id, gone)

    def prune_over_cap(self, user_id: str) -> int:
        if not self.max_items:
            return 0
        got = self.handles.get(user_id, where={"user_id": user_id}, include=RECORD)
        return self.handles.delete(user_id, over_cap(records(got), self.max_items))

    def now_and_then(self) -> None:
        """Every user pruned, once an `interval` (a store that only one user writes to
        would otherwise keep everyone else's expired memories for ever)."""
        now = self.clock()
        if (self.ttl_days or self.max_items) and now - self._last_full >= self.interval:
            self._last_full = now
            for user in self.handles.users():
                self.prune_user(user)
                self.prune_over_cap(user)
