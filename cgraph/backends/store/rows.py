"""What every session store shares: a session's summary row and one JSON encoder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cgraph.runtime.ports import SessionInfo
from cgraph.runtime.state.records import Event


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


def last_at(events: Sequence[Event], default: float) -> float:
    return events[-1].at if events else default


ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
"""One encoder for every write (a snapshot and each event, at every step): `json.dumps` with
options builds a new encoder per call, a fifth of what encoding cost a step."""


def dumps(data: Any) -> str:
    return ENCODER.encode(data)
