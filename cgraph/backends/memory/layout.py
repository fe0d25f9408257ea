"""How memories are laid out in Chroma, and how Chroma's answers become `Memory` records.

Kept apart from the store so the layout (one collection per user, one `owner` key per
user and tier) reads in one place.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from cgraph.backends.memory.policy import SESSION_TIERS, Write
from cgraph.errors import MemoryStoreError
from cgraph.runtime.ports import Memory
from cgraph.spec.model import TIERS, Tier

Where = dict[str, Any]
DEFAULT_COLLECTION = "cgraph_memories"
RECORD = ["documents", "metadatas"]
"""What a read asks Chroma for to build `Memory` records (`records`)."""


def owner_key(user_id: str, tier: str) -> str:
    """One metadata value naming both the tier and the user (a tier never holds "|")."""
    return f"{tier}|{user_id}"


def owner_where(user_id: str, tiers: Sequence[Tier] = (), session_id: str | None = None) -> Where:
    """Memories of `user_id` in `tiers` (all when empty); with `session_id`, a tier of
    `SESSION_TIERS` only that session's (`policy.visible`).

    One `$in` on the combined `owner` key, not an `$and` of `user_id` and `tier`: Chroma
    1.5 keeps every collection's metadata in one table, and a clause matching many rows
    (`tier`) made the filtered query 3-4x slower (bench/bench_recall.py). The session's
    clause is joined to its tier's owner key, which matches the user's rows only.
    """
    wanted = dict.fromkeys(tiers or TIERS)
    if session_id is None:
        return _owners(user_id, wanted)
    shared = [t for t in wanted if t not in SESSION_TIERS]
    clauses = [_owners(user_id, shared)] if shared else []
    clauses += [
        {"$and": [{"owner": owner_key(user_id, t)}, {"session_id": session_id}]}
        for t in wanted
        if t in SESSION_TIERS
    ]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}


def _owners(user_id: str, tiers: Iterable[Tier]) -> Where:
    return {"owner": {"$in": [owner_key(user_id, t) for t in tiers]}}


def collection_name(prefix: str, user_id: str) -> str:
    """One collection per user; a digest because Chroma restricts collection names."""
    return f"{prefix}-{hashlib.sha256(user_id.encode()).hexdigest()[:32]}"


CHROMA_FILE = "chroma.sqlite3"


def may_hold(
    folder: Path,
    name: str,
    user_id: str | None = None,
    tiers: Sequence[Tier] = (),
    session_id: str | None = None,
) -> bool:
    """False only when the embedded Chroma store in `folder` surely has no collection
    `name`: no store file, or none by that name in it. With `user_id`, False also when the
    collection surely holds none of that user's memories in `tiers` (all when empty) that
    session `session_id` may see (`policy.visible`). A look at Chroma's own SQLite file
    (read-only, stdlib) costs a millisecond where importing chromadb costs a second; any
    surprise in that file answers True, and the caller opens Chroma to be sure."""
    path = Path(folder) / CHROMA_FILE
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            found = db.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
            if found is None or user_id is None:
                return found is not None
            return _holds_visible(db, found[0], _owner_clauses(user_id, tiers, session_id))
        finally:
            db.close()
    except sqlite3.Error:
        return True


def _owner_clauses(
    user_id: str, tiers: Sequence[Tier], session_id: str | None
) -> list[tuple[str, str | None]]:
    """`owner_where` as (owner key, session id or None) pairs, for Chroma's file itself."""
    return [
        (owner_key(user_id, t), session_id if t in SESSION_TIERS else None)
        for t in dict.fromkeys(tiers or TIERS)
    ]


_VISIBLE = """SELECT 1 FROM embeddings e
    JOIN embedding_metadata o ON o.id = e.id AND o.key = 'owner' AND o.string_value = ?
    WHERE e.segment_id = ? AND (? IS NULL OR EXISTS (SELECT 1 FROM embedding_metadata s
        WHERE s.id = e.id AND s.key = 'session_id' AND s.string_value = ?))
    LIMIT 1"""


def _holds_visible(
    db: sqlite3.Connection, collection: str, clauses: list[tuple[str, str | None]]
) -> bool:
    """True unless the collection's metadata, caught up with every write to it, has no row
    matching one of `clauses`. Chroma writes to its log first (`embeddings_queue`) and then
    applies a write to the metadata; a write not applied yet may be a match."""
    segment = db.execute(
        "SELECT id FROM segments WHERE collection = ? AND scope = 'METADATA'", (collection,)
    ).fetchone()
    if segment is None:
        return True
    applied = db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", segment)
    logged = db.execute(
        "SELECT MAX(seq_id) FROM embeddings_queue WHERE topic LIKE ?", (f"%/{collection}",)
    )
    done, last = (applied.fetchone() or (None,))[0], logged.fetchone()[0]
    if last is not None and not (isinstance(done, int) and done >= last):
        return True
    return any(
        db.execute(_VISIBLE, (owner, segment[0], session, session)).fetchone()
        for owner, session in clauses
    )


def to_memory(
    id_: str, text: str | None, meta: Mapping[str, Any], score: float | None = None
) -> Memory:
    return Memory(
        id=id_,
        text=text or "",
        tier=cast(Tier, meta.get("tier", "task")),
        user_id=str(meta.get("user_id", "")),
        session_id=str(meta.get("session_id", "")),
        state=str(meta.get("state", "")),
        turn=int(meta.get("turn", 0)),
        created_at=float(meta.get("created_at", 0.0)),
        score=score,
    )


def stamp(user_id: str, w: Write, now: float) -> Memory:
    i = w.item
    return Memory(w.id, i.text, i.tier, user_id, i.session_id, i.state, i.turn, i.created_at or now)


def records(got: Mapping[str, Any]) -> Iterator[Memory]:
    for id_, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
        yield to_memory(id_, doc, meta)


def metadata(m: Memory) -> dict[str, str | int | float]:
    return {
        "user_id": m.user_id,
        "session_id": m.session_id,
        "tier": m.tier,
        "state": m.state,
        "turn": m.turn,
        "created_at": m.created_at,
        "owner": owner_key(m.user_id, m.tier),
    }


def hits(result: Mapping[str, Any]) -> Iterator[Memory]:
    """Memories from a Chroma query result, all queries flattened, scored 1 - distance."""
    columns = zip(
        result["ids"],
        result["documents"] or [],
        result["metadatas"] or [],
        result["distances"] or [],
        strict=True,
    )
    for ids, docs, metas, dists in columns:
        for id_, doc, meta, dist in zip(ids, docs, metas, dists, strict=True):
            yield to_memory(id_, doc, meta, round(1.0 - float(dist), 4))


def probe_server(host: str, port: int, timeout: float) -> None:
    """Fail fast when no Chroma server answers: the client itself waits without limit."""
    import urllib.request  # with http.client and ssl: 60 ms a run without a server skips

    url = f"http://{host}:{port}/api/v2/heartbeat"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            response.read()
    except OSError as err:
        raise MemoryStoreError(f"no Chroma server answers at {host}:{port}: {err}") from err


def set_http_timeout(client: Any, timeout: float) -> None:
    # chromadb's HTTP client is built with no timeout and offers no setting for one; a
    # server that accepts but never answers would hang the turn.
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None:
        import httpx

        session.timeout = httpx.Timeout(timeout)
