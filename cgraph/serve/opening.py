"""Where a request's session comes from: the one this process kept open since the
session's last request, when the store still holds that session at that step, else the
session as stored, opened on the graph it runs (finishing a turn a killed process left).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from cgraph.serve.graphs import Served
from cgraph.serve.problems import Problem
from cgraph.session import Session, Sessions, Standing, Turn

CACHED_SESSIONS = 1000
"""Sessions a process keeps open between requests (each checked before reuse)."""


class Opening:
    """The sessions a service's requests use: kept open between requests, or opened from
    the store through `opener` (the store's sessions with a graph's memory, or with none
    to describe them), on the graphs `served` (the service's own table, edited in place)."""

    def __init__(self, served: dict[str, Served], opener: Callable[[str | None], Sessions]) -> None:
        self.served, self.opener = served, opener
        self._kept = OpenSessions(CACHED_SESSIONS)

    def taken(
        self, user: str, sid: str, key: str | None, stood: Standing | None = None
    ) -> tuple[Session, Turn | None]:
        """The session to write to, under its lease, and the turn already made for `key`:
        the session this process kept open if the store still holds its last step, the
        key looked up in the same read (`SessionLog.recheck`), else the session opened from
        the store (finishing a turn a killed process left) and the key looked up after.
        The caller keeps it open again when the request succeeds; after a failure the next
        request opens it from the store. `stood` is where the store said the session
        stood when its lease was taken (asked with `key`), if it did."""
        kept = self._kept.take(sid)
        mine = kept is not None and kept.user_id == user
        checked = kept.log.recheck(key, stood) if kept is not None and mine else None
        if kept is not None and checked is not None and checked.current:
            kept.recovered = None  # reported by the request that recovered it
            return kept, checked.keyed
        session = self.stored(user, sid)
        return session, (session.log.with_key(key) if key is not None else None)

    def current(self, user: str, sid: str, stood: Standing | None) -> Session | None:
        """The session this process kept open, when `stood` (read with its lease) says the
        store still holds its last step and no turn was made for the message's key: taken
        without a read, so on the event loop. None: `taken` decides, in the pool."""
        if stood is None or stood.keyed is not None:
            return None
        kept = self._kept.take(sid)
        if kept is not None and kept.user_id == user and kept.log.recheck(None, stood).current:
            kept.recovered = None
            return kept
        if kept is not None:
            self._kept.keep(kept)  # `taken` looks at it again
        return None

    def stored(self, user: str, sid: str, *, finish: bool = True) -> Session:
        """The session as stored, as its user's; another user's is `NotTheOwner` (404)."""
        if len(self.served) == 1:
            name = next(iter(self.served))
        else:  # which graph: the stored session says (one more read)
            name = self.opener(None).info(sid, user_id=user).graph_name
        served = self.served.get(name)
        if served is None:
            raise Problem(409, "graph_not_served", f"session `{sid}` runs a graph not served here")
        return self.opener(name).resume(sid, graph=served.graph, user_id=user, finish=finish)

    def keep(self, session: Session) -> None:
        """Keep `session` open for its next request."""
        self._kept.keep(session)

    def drop(self, sid: str) -> None:
        """Keep session `sid` open no longer (it is being deleted)."""
        self._kept.take(sid)

    def let_go(self) -> None:
        """Keep no session open (the graphs they run changed)."""
        self._kept = OpenSessions(CACHED_SESSIONS)


class OpenSessions:
    """Sessions kept open between requests, the least recently used let go first. A
    session is taken out while a request uses it (under its lock, so by one request at a
    time), and its owner and its step are checked before it is used again."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, sid: str) -> Session | None:
        with self._lock:
            return self._kept.pop(sid, None)

    def keep(self, session: Session) -> None:
        with self._lock:
            self._kept[session.id] = session
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
