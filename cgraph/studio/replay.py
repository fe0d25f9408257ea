"""A conversation replayed on an edited graph: its messages sent again, in order, in a new
session, and each turn compared with the same turn before the edit — where the
conversation went, where it ended up, what was said. The designer's "what did my change
break" loop, run through the service like any other turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cgraph.errors import SessionCompleted
from cgraph.serve.service import Service
from cgraph.session import Session
from cgraph.spec.names import END

COMPARED = ("state", "path", "reply")
"""What a replayed turn is compared on, in the order the page names differences."""


@dataclass(frozen=True)
class Said:
    """One turn of the conversation before the edit."""

    turn: int
    user: str
    state: str
    """Where the turn ended; END once the conversation was over."""
    path: tuple[str, ...]
    reply: str

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "path": list(self.path), "reply": self.reply}


def said(session: Session) -> list[Said]:
    """The turns of `session` still in effect that answered a user message."""
    return [
        Said(t.number, t.user, END if t.completed else t.state, t.path, t.reply)
        for t in session.log.turns()
        if t.user is not None
    ]


def replayed(service: Service, user: str, graph: str, before: list[Said]) -> dict[str, Any]:
    """A new session of `graph` fed the messages of `before`; each row says which of
    `COMPARED` now differs (a message after the conversation ended is not sent)."""
    sid = service.create(user, graph, None)["session"]
    rows = []
    for old in before:
        try:
            now = service.send(user, sid, old.user, None)
        except SessionCompleted:
            rows.append(_row(old, None, None, ["ended"]))
            continue
        state = END if now["completed"] else now["state"]
        after = {"state": state, "path": now["path"], "reply": now["reply"]}
        was = old.as_json()
        rows.append(_row(old, now["turn"], after, [k for k in COMPARED if was[k] != after[k]]))
    return {"session": sid, "replay": rows}


def _row(
    old: Said, turn: int | None, after: dict[str, Any] | None, differs: list[str]
) -> dict[str, Any]:
    return {
        "turn": turn,
        "was_turn": old.turn,
        "user": old.user,
        "before": old.as_json(),
        "after": after,
        "differs": differs,
    }
