"""Memories kept in Chroma and searched by meaning, per user and tier.

Chroma never embeds anything itself (its default embedding would download a model):
vectors come from a cgraph `Embedder`, by default the process's shared MiniLM model, so
the user's message is embedded once per turn whatever reads it. Every chromadb failure
becomes a `MemoryStoreError`, which the engine turns into "no memories this time".

Retention: expired memories (per-tier `ttl_days`) are never recalled or listed and are
deleted by `prune()`, which `add` runs for its user and, every `prune_interval` seconds,
for everyone; per-tier `max_items` keeps the newest memories of each user.
Duplicates: a memory whose text matches an existing one of the same user and tier is not
stored; one that is merely very similar (a reworded or updated fact) replaces it.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from cgraph.backends.embed import Embedder, Vector
from cgraph.backends.memory.layout import (
    DEFAULT_COLLECTION,
    RECORD,
    metadata,
    owner_where,
    probe_server,
    records,
    set_http_timeout,
    stamp,
)
from cgraph.backends.memory.pending import Outbox
from cgraph.backends.memory.places import Handles, Place, missing, shared_place
from cgraph.backends.memory.policy import (
    ReadOnlyMemory,
    Write,
    best,
    export_dict,
    plan_writes,
    visible,
)
from cgraph.backends.memory.retention import Retention
from cgraph.errors import CgraphError, MemoryStoreError
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory
from cgraph.spec.model import MemoryConfig, Tier

DUPLICATE_SIMILARITY = 0.90
"""Measured on MiniLM: restatements of one fact score 0.93-1.0, distinct facts about the
same subject 0.70-0.81; updates that change only a number score 0.92-0.97 (they replace)."""
SERVER_TIMEOUT = 5.0
ADD_BATCH = 1000
"""Memories per Chroma write; its limit is about 5,000."""
Memories = list[Memory]
T = TypeVar("T")


def memory_folder(store: Path) -> Path:
    """The embedded Chroma folder inside a session store folder."""
    return Path(store) / "memory"


def open_memory(
    config: MemoryConfig,
    folder: Path | None,
    embedder: Embedder | None = None,
    *,
    connect: bool = False,
) -> MemoryStore:
    """The store a graph's `memory:` settings ask for.

    A Chroma server when `host` is set; else an embedded store in `folder/memory`, or an
    in-process one when `folder` is None. `store: off` means nothing new is stored, but
    earlier memories are still recalled, so it returns a read-only view, not `NullMemory`.
    Chroma is imported and opened on first use, or now with `connect=True` (from a
    background thread, so the first turn does not pay for it; raises `MemoryStoreError`).
    """
    chroma = ChromaMemory(
        path=None if config.host or folder is None else memory_folder(folder),
        host=config.host,
        port=config.port,
        embedder=embedder,
        ttl_days=config.ttl_days,
        max_items=config.max_items,
    )
    if connect:
        chroma.connect()
    return ReadOnlyMemory(chroma) if config.store == "off" else chroma


class ChromaMemory:
    """A `MemoryStore` in an embedded Chroma folder, a Chroma server, or in-process
    (no `path`, no `host`: private to this object, gone with the process).

    Each user's memories live in their own collection (named by a digest of the user
    id), and every read also filters on the user: isolation does not rest on one check.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        host: str | None = None,
        port: int = 8000,
        embedder: Embedder | None = None,
        collection: str = DEFAULT_COLLECTION,
        ttl_days: Mapping[Tier, float] | None = None,
        max_items: Mapping[Tier, int] | None = None,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        duplicate_similarity: float = DUPLICATE_SIMILARITY,
        timeout: float = SERVER_TIMEOUT,
        prune_interval: float = 3600.0,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.host, self.port, self.timeout = host, port, timeout
        self.ttl_days = dict(ttl_days or {})
        self.max_items = dict(max_items or {})
        self.duplicate_similarity = duplicate_similarity
        # In-process Chroma is one per process: a private prefix keeps two stores apart.
        private = path is None and not host
        self.prefix = f"{collection}-{uuid.uuid4().hex[:8]}" if private else collection
        self._embedder = embedder
        self._clock = clock
        self._new_id = new_id
        # One client and one handle per user collection for every store of this process
        # naming the same place (`places`): what one store drops, none still holds.
        place = Place() if private else shared_place(self.path, host, port, self.prefix)
        # What earlier runs left waiting in the outbox is taken in before any read.
        self._handles = Handles(place, self.prefix, self._connect, self._drain)
        self._retention = Retention(
            self._handles, self.ttl_days, self.max_items, clock, prune_interval
        )

    def __repr__(self) -> str:
        where = f"{self.host}:{self.port}" if self.host else (self.path or "in-process")
        return f"ChromaMemory({where}, collection={self.prefix!r})"

    def connect(self) -> None:
        """Import chromadb and open the client now rather than on first use."""
        with self._guard("open"):
            self._handles.client()

    # --- the MemoryStore protocol -------------------------------------------------------

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
        texts = [q.strip() for q in queries if q and q.strip()]
        if not texts or top_k < 1:
            return []
        vectors = self._embed(texts)
        where = owner_where(user_id, tiers, session_id)

        def query() -> Memories:
            hits = self._handles.query(user_id, vectors, where, top_k)
            if any(self._retention.expired(m) for m in hits):  # rare: prune() runs on every add
                self._retention.prune_user(user_id)
                hits = self._handles.query(user_id, vectors, where, top_k)
            return hits

        hits = self._guarded("recall", query)
        live = [m for m in hits if not self._retention.expired(m) and visible(m, session_id)]
        return best(live, top_k, min_score)

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        fresh = [replace(i, text=i.text.strip()) for i in items if i.text.strip()]
        if not fresh:
            return []
        return self._guarded("store", partial(self._store, user_id, fresh))

    def _store(self, user_id: str, fresh: Sequence[NewMemory]) -> Memories:
        vectors = self._embed([i.text for i in fresh])
        self._retention.now_and_then()
        self._retention.prune_user(user_id)
        nearest = self._handles.nearest(user_id, fresh, vectors)
        plan = plan_writes(
            fresh, vectors, nearest, threshold=self.duplicate_similarity, new_id=self._new_id
        )
        stored = self._write(user_id, plan)
        self._retention.prune_over_cap(user_id)
        return stored

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> Memories:
        """A user's live memories (those `session_id` may see, when given), oldest first."""
        where = owner_where(user_id, tiers, session_id)
        got = self._guarded(
            "list", partial(self._handles.get, user_id, where=where, include=RECORD)
        )
        found = [
            m for m in records(got) if not self._retention.expired(m) and visible(m, session_id)
        ]
        return sorted(found, key=lambda m: (m.created_at, m.id))

    def export(self, user_id: str) -> builtins.list[dict[str, Any]]:
        """A user's memories as JSON-able dicts, oldest first."""
        return [export_dict(m) for m in self.list(user_id)]

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        if ids is not None and not ids:
            return 0

        def delete() -> int:
            if ids is None:
                return self._handles.drop(user_id)
            owned = self._handles.get(
                user_id, ids=list(ids), where={"user_id": user_id}, include=[]
            )
            return self._handles.delete(user_id, owned["ids"])

        return self._guarded("delete", delete)

    def count(self, user_id: str) -> int:
        got = self._guarded(
            "count", partial(self._handles.get, user_id, where={"user_id": user_id}, include=[])
        )
        return len(got["ids"])

    def users(self) -> builtins.list[str]:
        """Every user with a memory collection in this store."""
        return sorted(self._guarded("list", self._handles.users))

    # --- retention ----------------------------------------------------------------------

    def prune(self, user_id: str | None = None) -> int:
        """Delete expired memories and those over the per-tier caps; returns how many."""

        def prune() -> int:
            users = [user_id] if user_id is not None else self._handles.users()
            return sum(
                self._retention.prune_user(u) + self._retention.prune_over_cap(u) for u in users
            )

        return self._guarded("prune", prune)

    # --- storing ------------------------------------------------------------------------

    def _write(self, user_id: str, writes: Sequence[Write]) -> Memories:
        now = self._clock()
        stored = [stamp(user_id, w, now) for w in writes]
        coll = self._handles.of(user_id, create=True)
        for replacing in (True, False):
            chosen = [
                (w, m) for w, m in zip(writes, stored, strict=True) if w.replaces is replacing
            ]
            for start in range(0, len(chosen), ADD_BATCH):
                batch = chosen[start : start + ADD_BATCH]
                (coll.update if replacing else coll.add)(
                    ids=[m.id for _, m in batch],
                    embeddings=[w.vector for w, _ in batch],
                    documents=[m.text for _, m in batch],
                    metadatas=[metadata(m) for _, m in batch],
                )
        return stored

    def _embed(self, texts: Sequence[str]) -> builtins.list[Vector]:
        with self._guard("embed"):
            if self._embedder is None:
                from cgraph.backends.embed import shared_embedder

                self._embedder = shared_embedder()
            return self._embedder.embed(texts)

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except MemoryStoreError:
            raise
        except CgraphError as err:
            raise MemoryStoreError(f"memory {action} failed: {err.message}") from err
        except Exception as err:  # chromadb raises many types; the engine needs one
            self._handles.forget()  # a handle may be stale
            raise MemoryStoreError(f"memory {action} failed ({self!r}): {err}") from err

    def drain(self) -> None:
        """Take in the memories waiting in the outbox (`pending`) of an embedded store."""
        with self._guard("store"):
            self._handles.client()
            self._drain()

    def _guarded(self, action: str, work: Callable[[], T]) -> T:
        """`work()` under `_guard`, once more when a collection handle was stale (another
        process dropped the user's collection since it was looked up): the second time
        looks it up again, and finds it gone or new."""
        with self._guard(action):
            try:
                return work()
            except Exception as err:
                if not missing(err):
                    raise
                self._handles.forget()
                return work()

    def _drain(self) -> None:
        if self.path is None:
            return
        outbox = Outbox(self.path)
        for user_id, items in outbox.waiting().items():
            self._store(user_id, items)
            outbox.drop(user_id, [i.id for i in items])

    def _connect(self) -> Any:
        from cgraph.backends.embed import heavy_import_lock

        if self.host:  # before the lock: an absent server may take `timeout` to fail
            probe_server(self.host, self.port, self.timeout)
        # Not at the same time as torch in another thread; creating a client imports
        # chromadb's components lazily, so the lock covers it too.
        with heavy_import_lock:
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False)
            if self.host:
                client = chromadb.HttpClient(host=self.host, port=self.port, settings=settings)
                set_http_timeout(client, self.timeout)
                return client
            if self.path is not None:
                self.path.mkdir(parents=True, exist_ok=True)
                return chromadb.PersistentClient(path=str(self.path), settings=settings)
            return chromadb.EphemeralClient(settings=settings)
