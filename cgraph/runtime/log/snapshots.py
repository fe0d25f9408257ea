"""Stored snapshots, read back: each carries its version, and one table of migrations
brings an older one to this version (a session stored by an earlier cgraph resumes).

A migration may read the session's log (an older snapshot lacked what the log knows):
`events` is called only when one does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cgraph.runtime.log.reading import effective
from cgraph.runtime.state.records import Event, message_of
from cgraph.runtime.state.snapshot import SNAPSHOT_VERSION, LogPosition, SessionState

Events = Callable[[], list[Event]]


def _places(data: dict[str, Any], events: Events) -> dict[str, Any]:
    """1 → 2: where the latest turn begins, how many messages the transcript holds, the
    lasting notes given, from the log as it stood at the end of the snapshot's turn; and
    `limited` (stored as a flag before it named the guard) as a guard's name."""
    turn = int(data.get("turn", 0))
    log = [e for e in effective(events()) if e.turn <= turn and e.kind != "undo"]
    begun = [e.seq for e in log if e.turn == turn and e.kind == "user_message"]
    skipped = (e for e in log if e.kind == "tool_call" and e.data.get("status") == "skipped")
    limited = data.get("limited")
    return {
        **data,
        "turn_seq": begun[-1] if begun else 0,
        "messages": sum(1 for e in log if message_of(e) is not None),
        "noted": list(dict.fromkeys(str(e.data.get("error", "")) for e in skipped)),
        "limited": None if isinstance(limited, bool) else limited,
    }


MIGRATIONS: dict[int, Callable[[dict[str, Any], Events], dict[str, Any]]] = {1: _places}
"""Version → the function that brings a snapshot of that version to the next."""


def read_snapshot(data: dict[str, Any], events: Events) -> tuple[SessionState, LogPosition]:
    """A stored snapshot as this version's state and its log's position, migrated step by
    step."""
    version = int(data.get("version", 1))
    while version < SNAPSHOT_VERSION:
        data = {**MIGRATIONS[version](data, events), "version": version + 1}
        version += 1
    return SessionState.from_dict(data), LogPosition.from_dict(data)
