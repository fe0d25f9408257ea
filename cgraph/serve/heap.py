"""The server's heap once it has served: what the process imported and built to serve a
turn (the model client, the graph, its templates) frozen out of the garbage collector's
sight. A full collection walks every object alive, and a served process holds about half
a million long-lived ones: each full collection stalled the event loop ~160 ms and the
collector cost ~3 ms of CPU a turn over a loaded run. Objects made later, and every
cycle among them, are collected as before."""

from __future__ import annotations

import gc
import threading

_settled = threading.Event()


def settle() -> None:
    """Freeze the heap the first time a turn has run in this process (once: the
    collection before it pauses that turn's reply only)."""
    if _settled.is_set():
        return
    _settled.set()
    gc.collect()
    gc.freeze()
