"""What every session store shares: a session's summary row, the lookups a running session
needs (a message's place, a turn's key), and one JSON encoder."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from cgraph.errors import SessionNotFound
from cgraph.runtime.ports import SessionInfo, Standing
from cgraph.runtime.state.records import Event, message_of

SCHEMA_VERSION = 4
"""The layout of a store's tables: 1 had no message places and no keys (a session read its
whole log to find them); 2 indexes both; 3 adds the sessions' leases (an earlier cgraph,
which does not look at them, must not write beside a later one); 4 the webhook outbox,
written by the commits (an earlier cgraph would commit turns and drop their events)."""


def summary_row(info: SessionInfo, snapshot: dict[str, Any], at: float) -> SessionInfo:
    stack = snapshot.get("stack") or [{}]
    top = stack[-1]
    state = f"{top.get('graph')}#{top.get('state')}" if top.get("graph") else top.get("state", "")
    return replace(
        info,
        updated_at=max(at, info.updated_at),
        turn=int(snapshot.get("turn", 0)),
        state=str(state),
        completed=bool(snapshot.get("completed", False)),
    )


def info_row(row: Sequence[Any], snapshot: dict[str, Any]) -> SessionInfo:
    """A `sessions` row (id, user, graph, graph name, model, created, updated, ...) with
    its snapshot, as the store's `SessionInfo` (the SQL stores select the same columns)."""
    base = SessionInfo(
        id=row[0],
        user_id=row[1],
        graph=row[2],
        graph_name=row[3],
        model=row[4],
        created_at=row[5],
        updated_at=row[6],
    )
    return summary_row(base, snapshot, row[6])


def missing(session_id: str, where: object) -> SessionNotFound:
    """The one error of a store asked for a session it does not hold (`where`: the store)."""
    return SessionNotFound(f"no session `{session_id}` in {where}")


def standing_row(created_at: float, snapshot: dict[str, Any], turn: Any, seq: Any) -> Standing:
    """Where a session stands, from its row and the turn and seq of a key (None when the
    key is not in effect), as the SQL stores read them in one statement."""
    keyed = None if turn is None else (int(turn), int(seq))
    return Standing(created_at, snapshot.get("seq"), keyed)


def last_at(events: Sequence[Event], default: float) -> float:
    return events[-1].at if events else default


def place(event: Event) -> int | None:
    """A message event's place in the transcript (`data["msg"]`), else None."""
    value = event.data.get("msg") if event.kind in ("user_message", "reply") else None
    return value if isinstance(value, int) else None


def key_of(event: Event) -> str | None:
    """The idempotency key a user message was sent with, as text, else None."""
    if event.kind != "user_message":
        return None
    key = event.data.get("key")
    return None if key is None else str(key)


def in_effect(placed: Iterable[tuple[int | None, Event]], start: int, end: int) -> list[Event]:
    """The message events in effect at places `start` to `end` (excluded), from (place,
    event) pairs in log order: after an undo a place is taken again, and the latest event
    there holds."""
    latest: dict[int, Event] = {}
    for at, event in placed:
        if at is not None and start <= at < end:
            latest[at] = event
    return [latest[at] for at in range(start, end) if at in latest]


def replayed(events: Iterable[Event]) -> tuple[dict[int, int], dict[str, tuple[int, int]]]:
    """For a log written before places and keys were recorded: seq → place of each message
    event, and the keys in effect with (turn, seq). The log is replayed, and each undo
    gives the places of the turns it took back again and frees their keys."""
    found: dict[int, int] = {}
    kept: list[int] = []  # the turn of each message in effect, by place
    keys: dict[str, tuple[int, int]] = {}
    for event in events:
        if event.kind == "undo":
            back = int(event.data.get("turn", event.turn))
            kept = [turn for turn in kept if turn < back]
            keys = {k: v for k, v in keys.items() if v[0] < back}
            continue
        if message_of(event) is not None:
            found[event.seq] = len(kept)
            kept.append(event.turn)
        key = key_of(event)
        if key is not None:
            keys[key] = (event.turn, event.seq)
    return found, keys


ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
"""One encoder for every write (a snapshot and each event, at every step): `json.dumps` with
options builds a new encoder per call, a fifth of what encoding cost a step."""


def dumps(data: Any) -> str:
    return ENCODER.encode(data)


def check_quota(kept: int, most: int | None) -> None:
    """`SessionQuota` when a user keeping `kept` sessions may not start one more."""
    if most is not None and kept >= most:
        from cgraph.errors import SessionQuota

        raise SessionQuota(f"over {most} sessions; delete one first")
