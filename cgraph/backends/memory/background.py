"""A memory store opened in a background thread, so a conversation can start at once.

Chroma and the embedding model take seconds to load; the first call that needs the store
waits for it, and a store that fails to open becomes no memory (with a note saying why).
"""

from __future__ import annotations

import threading
from pathlib import Path

from cgraph.backends.memory.policy import ForwardingMemory, MemoryStore, NullMemory
from cgraph.spec.model import MemoryConfig


class BackgroundMemory(ForwardingMemory):
    """A `MemoryStore` opened in a thread; calls wait for it, failures fall back to none."""

    def __init__(self, config: MemoryConfig, folder: Path, embedding_model: str = "") -> None:
        self._store: MemoryStore = NullMemory()
        self.note = ""
        """Why memory is off, when it failed to open ("" while it works)."""
        self._ready = threading.Event()
        thread = threading.Thread(
            target=self._open,
            args=(config, folder, embedding_model),
            name="cgraph-memory",
            daemon=True,
        )
        thread.start()

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
    def ready(self) -> bool:
        """True once the store is open (or failed to open)."""
        return self._ready.is_set()

    def target(self) -> MemoryStore:
        self._ready.wait()
        return self._store
