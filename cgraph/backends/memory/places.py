"""The Chroma clients of this process and the collection handles they lent, one set per
place (a folder, or a server, and a collection prefix).

Every `ChromaMemory` naming the same place shares them: a server serving several graphs
opens one store per graph, and when one of them drops a user's collection (`DELETE
/v1/memories`) the others must not go on with a handle to it. A handle can still go stale
when another process drops the collection (workers sharing a Chroma server): `missing`
tells that failure from the others, and the store looks the collection up again once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from cgraph.backends.embed import Vector
from cgraph.backends.memory.layout import Where, collection_name, hits, owner_where
from cgraph.backends.memory.policy import Nearest, scope
from cgraph.runtime.ports import Memory, NewMemory


@dataclass(eq=False)
class Place:
    """One Chroma client and the user collections looked up through it."""

    client: Any = None
    collections: dict[str, Any] = field(default_factory=dict)
    """User id → the handle of their collection."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while the client is opened, so two threads do not open two."""


_PLACES: dict[tuple[str, str, int, str], Place] = {}
_LOCK = threading.Lock()


def shared_place(path: Path | None, host: str | None, port: int, prefix: str) -> Place:
    """The place of the store in `path` (a folder) or on `host:port`, with collections
    named `prefix-…`: the same object for every store of this process naming it."""
    where = str(path.resolve()) if path is not None else ""
    key = (where, host or "", port if host else 0, prefix)
    with _LOCK:
        return _PLACES.setdefault(key, Place())


def missing(error: BaseException) -> bool:
    """Whether `error` is Chroma's answer for a collection that no longer exists (a stale
    handle: another store or process dropped it)."""
    from chromadb.errors import NotFoundError

    return isinstance(error, NotFoundError)


class Handles:
    """A store's way into its place: the client (opened on first use by `connect`, then
    `opened()` called once) and each user's collection, named `prefix-<digest>`."""

    def __init__(
        self, place: Place, prefix: str, connect: Callable[[], Any], opened: Callable[[], None]
    ) -> None:
        self.place, self.prefix = place, prefix
        self._connect, self._opened = connect, opened
        self._first = True

    def client(self) -> Any:
        place = self.place
        with place.lock:
            if place.client is None:
                place.client = self._connect()
        if self._first:
            self._first = False
            self._opened()
        return place.client

    def forget(self) -> None:
        """Drop every cached handle (one may be stale): the next use looks them up."""
        self.place.collections.clear()

    def of(self, user_id: str, *, create: bool) -> Any:
        """The user's collection, or None when they have none and `create` is false."""
        known = self.place.collections.get(user_id)
        if known is not None:
            return known
        name = collection_name(self.prefix, user_id)
        client = self.client()
        if create:
            coll = client.get_or_create_collection(
                name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"cgraph": "memories", "user_id": user_id},
            )
        else:
            from chromadb.errors import NotFoundError

            try:
                coll = client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return None  # not cached: another process may create it
        self.place.collections[user_id] = coll
        return coll

    def query(
        self, user_id: str, vectors: Sequence[Vector], where: Where, top_k: int
    ) -> list[Memory]:
        coll = self.of(user_id, create=False)
        if coll is None:
            return []
        result = coll.query(
            query_embeddings=list(vectors),
            n_results=top_k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return [m for m in hits(result) if m.user_id == user_id]

    def nearest(
        self, user_id: str, items: Sequence[NewMemory], vectors: Sequence[Vector]
    ) -> list[Nearest]:
        """Each item's most similar memory of the same user and `scope` (tier, and session
        for the task tier): (id, score, text)."""
        nearest: list[Nearest] = [None] * len(items)
        coll = self.of(user_id, create=False)
        scopes = dict.fromkeys(scope(i.tier, i.session_id) for i in items)
        for tier, session in scopes if coll is not None else ():
            index = [
                n for n, i in enumerate(items) if scope(i.tier, i.session_id) == (tier, session)
            ]
            result = coll.query(
                query_embeddings=[vectors[n] for n in index],
                n_results=1,
                where=owner_where(user_id, [tier], session),
                include=["documents", "distances"],
            )
            for n, ids, docs, dists in zip(
                index, result["ids"], result["documents"], result["distances"], strict=True
            ):
                if ids:
                    nearest[n] = (ids[0], 1.0 - float(dists[0]), docs[0] or "")
        return nearest

    def get(self, user_id: str, **query: Any) -> dict[str, Any]:
        coll = self.of(user_id, create=False)
        if coll is None:
            return {"ids": [], "documents": [], "metadatas": []}
        return cast(dict[str, Any], coll.get(**query))

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        coll = self.of(user_id, create=False)
        if not ids or coll is None:
            return 0
        coll.delete(ids=list(ids))
        return len(ids)

    def drop(self, user_id: str) -> int:
        """Forget a user entirely: the collection goes, with the user id in its metadata."""
        count = len(self.get(user_id, include=[])["ids"])
        if self.of(user_id, create=False) is not None:
            self.client().delete_collection(collection_name(self.prefix, user_id))
        self.place.collections.pop(user_id, None)
        return count

    def users(self) -> dict[str, Any]:
        """User id → collection, for every user with a collection in this place."""
        prefix = f"{self.prefix}-"
        found = {}
        for coll in self.client().list_collections():
            if coll.name.startswith(prefix) and (coll.metadata or {}).get("cgraph"):
                found[str(coll.metadata["user_id"])] = coll
        return found
