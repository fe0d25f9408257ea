"""The memory store of `cgraph run`: Chroma opened in a thread, and only when needed.

Importing chromadb costs a second and a half of CPU and 50 MB, so a run opens it only to
read memories that may exist: at launch (in a thread, while the first prompt is shown)
when the user may have some the run can read (`Reading`), else at the first read that may
find some. A read that surely finds nothing (no collection in the Chroma file or no
matching memory in it, nothing matching in the outbox) is answered "none" without
Chroma, and memories stored before Chroma is open wait in the outbox
(`cgraph.backends.memory.pending`), which Chroma drains when it opens, in this run or a
later one; so do those stored after (a write into Chroma costs a turn 100 ms), taken in
before the next read. A store that fails to open becomes no memory, with a note saying
why.
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cgraph.backends.memory.layout import DEFAULT_COLLECTION, collection_name, may_hold
from cgraph.backends.memory.pending import Outbox
from cgraph.backends.memory.policy import SESSION_TIERS, ForwardingMemory
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory, NullMemory
from cgraph.spec.model import TIERS, MemoryConfig, Tier


@dataclass(frozen=True, kw_only=True)
class Reading:
    """What a run can read of its user's memories, known at launch: whether Chroma is
    worth opening then."""

    tiers: frozenset[Tier] = frozenset()
    """The tiers the graph recalls."""
    session_id: str | None = None
    """The run's session, which recalls its own task memories; None for a new session,
    which has none yet."""
    counts: bool = False
    """The graph counts every memory of the user (a conditional start's `has_memories`)."""

    def launch_tiers(self) -> tuple[Tier, ...] | None:
        """The tiers whose memories this session may read (all: empty); None: none."""
        if self.counts:
            return ()
        kept = [t for t in TIERS if t in self.tiers]
        if self.session_id is None:
            kept = [t for t in kept if t not in SESSION_TIERS]
        return tuple(kept) or None


class BackgroundMemory(ForwardingMemory):
    """A `MemoryStore` opened in a thread when first needed; see the module docstring."""

    def __init__(
        self,
        config: MemoryConfig,
        folder: Path,
        embedding_model: str = "",
        *,
        user_id: str | None = None,
        reading: Reading | None = None,
    ) -> None:
        """`user_id`: the run's user, whose memories (if any) start loading now; None
        opens the store now whoever the user is. `reading`: what the run reads, so Chroma
        opens at launch only for a memory it can read (None: for any of the user's), and
        once a memory of a tier it recalls waits in the outbox Chroma starts opening in
        the background (while the user types), not in the turn that reads it."""
        self._args = (config, folder, embedding_model)
        self._recalls = reading.tiers if reading else frozenset()
        self._store: MemoryStore = NullMemory()
        self.note = ""
        """Why memory is off, when it failed to open ("" while it works)."""
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._opening: threading.Thread | None = None
        self._chroma_folder = Path(folder) / "memory"
        self._outbox = None if config.host else Outbox(self._chroma_folder)
        if user_id is None or self._readable_at_launch(user_id, reading):
            self.open_soon()

    def _readable_at_launch(self, user_id: str, reading: Reading | None) -> bool:
        if self._outbox is None:
            return True  # a Chroma server: every write goes to it, so it is opened at once
        tiers = () if reading is None else reading.launch_tiers()
        if tiers is None:
            return False
        session = None if reading is None or reading.counts else reading.session_id
        return not self._surely_empty(user_id, tiers, session)

    def open_soon(self) -> None:
        """Start opening the store in the background (once)."""
        with self._lock:
            if self._opening is None:
                self._opening = threading.Thread(
                    target=self._open, args=self._args, name="cgraph-memory", daemon=True
                )
                self._opening.start()

    def _open(self, config: MemoryConfig, folder: Path, embedding_model: str) -> None:
        try:
            from cgraph.backends.embed import shared_embedder
            from cgraph.backends.memory.chroma import open_memory

            embedder = shared_embedder(embedding_model)
            self._store = open_memory(config, folder, embedder=embedder, connect=True)
        except ImportError as err:
            self.note = f"memory is off ({err})"
        except Exception as err:  # the conversation works without memory
            self.note = f"memory is off: {err}"
        finally:
            self._ready.set()

    @property
    def opened(self) -> bool:
        """True once the store started opening (Chroma is, or is being, imported)."""
        return self._opening is not None

    @property
    def ready(self) -> bool:
        """True unless the store is opening right now."""
        return self._opening is None or self._ready.is_set()

    def target(self) -> MemoryStore:
        """The open store, with this run's waiting memories taken in (before any read)."""
        self.open_soon()
        self._ready.wait()
        drain = getattr(self._store, "drain", None)  # a read-only view has none to take
        if self._outbox is not None and callable(drain):
            drain()
        return self._store

    def _surely_empty(
        self, user_id: str, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> bool:
        """True when `user_id` has nothing stored (in `tiers`, when given; with
        `session_id`, that this session may see), known without opening Chroma: nothing
        waiting in the outbox, nothing in Chroma's file."""
        if self._outbox is None or self.opened:
            return False
        name = collection_name(DEFAULT_COLLECTION, user_id)
        if self._outbox.holds(user_id, tiers, session_id):
            return False
        return not may_hold(self._chroma_folder, name, user_id, tiers, session_id)

    # --- reads: none for a user with nothing stored, else from Chroma --------------------

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
        if self._surely_empty(user_id, tiers, session_id):
            return []
        return super().recall(
            user_id, queries, tiers=tiers, top_k=top_k, min_score=min_score, session_id=session_id
        )

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        if self._surely_empty(user_id, tiers, session_id):
            return []
        return super().list(user_id, tiers=tiers, session_id=session_id)

    def count(self, user_id: str) -> int:
        return 0 if self._surely_empty(user_id) else super().count(user_id)

    # --- writes: to the outbox, taken into Chroma before the next read --------------------

    def add(self, user_id: str, items: Sequence[NewMemory]) -> builtins.list[Memory]:
        """Kept in the outbox (a millisecond) even when Chroma is open (a write there,
        with its duplicate checks, costs a turn 100 ms): the next read takes them in."""
        if self._outbox is None:
            return super().add(user_id, items)
        if self._args[0].store == "off":
            return []  # as the store's read-only view
        now = time.time()
        waiting = [
            Memory(uuid.uuid4().hex, text, i.tier, user_id, i.session_id, i.state, i.turn, now)
            for i in items
            if (text := i.text.strip())
        ]
        self._outbox.put(user_id, waiting)
        if any(m.tier in self._recalls for m in waiting):
            self.open_soon()
        return waiting

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        if self._outbox is None:
            return super().delete(user_id, ids)
        dropped = self._outbox.drop(user_id, ids)
        name = collection_name(DEFAULT_COLLECTION, user_id)
        if not self.opened and not may_hold(self._chroma_folder, name):
            return dropped
        rest = None if ids is None else list(ids)
        return dropped + super().delete(user_id, rest)
