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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
