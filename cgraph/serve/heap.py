"""The garbage collector's settings in a served process.

A process carrying hundreds of turns that wait on a model keeps each turn's objects alive
across the wait. With Python's default young generation (700 new objects) the collector
ran about a thousand times over a loaded run, walking the same waiting objects each time
and promoting them, so that the older generations' collections walked the whole heap (one
full collection stalled the event loop 0.47 s). Measured in the served process at 256
sessions on a 1 s model: 3.7 s of collections over 1,280 turns (2.9 ms a turn) with the
defaults, 0.10-0.15 s with these settings (the performance page has the figures).
"""

from __future__ import annotations

import gc

YOUNG = 50_000
"""New container objects, net of those freed, before a young collection (Python's
default is 700): most of a turn's objects are freed by their reference counts before
this many accumulate, so a collection finds few to walk or promote."""
OLDER = (20, 10)
"""Young collections before a middle one, middle ones before a full one (10 and 10)."""


def settle() -> None:
    """Once the app is built, before it serves: what the process imported and loaded is
    frozen out of the collector's sight (it lives as long as the process), and the young
    generation is sized for a server's live set. Cycles made later are still collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, *OLDER)
