"""How the PostgreSQL store writes a step: one statement, made of the pieces the step has
(its events' row, the snapshot, an undo's rewind, the keys, the turn's checkpoint, its
deliveries), every piece written only when the write's fence is the lease in force
(`FENCED`); and the rows a turn's steps wrote in this process, folded into one when the
turn ends (`Runs`). A parameter the statement selects (rather than compares with a
column) is cast: the served loop's driver takes each type from the server, which reads
an uncast one as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from cgraph.backends.store.outbox import COLUMNS, TABLE, values
from cgraph.backends.store.packing import deflated, events_text, joined
from cgraph.backends.store.rows import key_of, last_at, place
from cgraph.errors import StoreError
from cgraph.runtime.ports import Delivery
from cgraph.runtime.state.records import Event

NOW = "extract(epoch FROM clock_timestamp())"
"""The database's clock: the one every machine's leases are timed by."""
FENCED = f"""
WITH unleased AS (INSERT INTO cgraph_leases AS l (id, holder, expires, fence)
    SELECT %(sid)s, NULL, 0, 1 WHERE %(fence)s::bigint IS NULL
    ON CONFLICT (id) DO UPDATE SET fence = l.fence + 1
    WHERE l.holder IS NULL OR l.expires <= {NOW}
    RETURNING 1),
ok AS (SELECT CASE WHEN %(fence)s::bigint IS NULL THEN EXISTS (SELECT 1 FROM unleased)
    ELSE EXISTS (
        SELECT 1 FROM cgraph_leases
        WHERE id = %(sid)s AND fence = %(fence)s AND holder IS NOT NULL FOR SHARE)
    END AS ok)"""
"""Whether a write may go: with a fence, when it is the lease in force (its row locked
until the write commits, so a lease is not taken over in the middle of it); without one
(the library without `hold`), when no lease is in force, and then the write takes the
next fence itself, in a row it makes if the session has none: a holder taking the
session meanwhile waits for the write, its lease does not follow the one its store let
go (`Holding.followed`: it reads the session again, after), and a lapsed holder's late
writes are refused."""

_NEW = """,
n AS (SELECT %(data)s::bytea IS NULL OR NOT EXISTS (SELECT 1 FROM cgraph_log l, cgraph_sessions c
    WHERE c.id = %(sid)s AND l.sid = c.key AND l.seq >= %(first)s::int) AS new)"""
"""Whether the step's events are new: none at or after its first is stored already (one
committed twice, or a second writer's committed before this statement began). A
condition of the session's row (`s`), so that a step refused writes nothing at all:
every other piece is written from `s`."""
_EVENTS = """,
e AS (INSERT INTO cgraph_log (sid, seq, msg, msg_end, data)
    SELECT s.key, %(last)s::int, %(msg)s::int, %(msg_end)s::int, %(data)s::bytea FROM s
    WHERE %(data)s::bytea IS NOT NULL
    RETURNING 1)"""
"""A step's events as one row (`s` found them new)."""
_FOLD = """,
f AS (SELECT count(*) AS n FROM cgraph_log l, s
    WHERE l.sid = s.key AND l.seq >= %(fold_from)s::int AND l.seq < %(first)s::int),
d AS (DELETE FROM cgraph_log l USING s, f
    WHERE l.sid = s.key AND l.seq >= %(fold_from)s::int AND l.seq < %(first)s::int
        AND f.n = %(folded)s),
e AS (INSERT INTO cgraph_log (sid, seq, msg, msg_end, data)
    SELECT s.key, %(last)s::int,
        CASE WHEN f.n = %(folded)s::bigint THEN %(fold_msg)s::int ELSE %(msg)s::int END,
        CASE WHEN f.n = %(folded)s::bigint THEN %(fold_msg_end)s::int ELSE %(msg_end)s::int END,
        CASE WHEN f.n = %(folded)s::bigint THEN %(fold_data)s::bytea ELSE %(data)s::bytea END
    FROM s, f
    RETURNING 1)"""
"""A turn's last step: its row and the rows of the turn's earlier steps (`folded` rows from
seq `fold_from` on, which this process wrote) replaced by one row of them all, deflated.
When the rows there are not the ones expected (another process wrote some), the step's
row is written alone, as `_EVENTS` does."""
_STEP = (
    FENCED
    + _NEW
    + """,
s AS (
    UPDATE cgraph_sessions SET snapshot = %(snapshot)s, turn_seq = %(turn_seq)s,
        updated_at = greatest(updated_at, %(at)s)
    WHERE id = %(sid)s AND (SELECT ok FROM ok) AND (SELECT new FROM n) RETURNING key)"""
)
_REWIND = """,
dc AS (DELETE FROM cgraph_checkpoints USING s WHERE sid = s.key AND turn > %(rewind)s),
dk AS (DELETE FROM cgraph_keys USING s WHERE sid = s.key AND turn > %(rewind)s)"""
_KEYS = """,
k AS (INSERT INTO cgraph_keys (sid, key, turn, seq)
    SELECT s.key, u.* FROM s, unnest(%(keys)s::text[], %(key_turns)s::int[],
        %(key_seqs)s::int[]) AS u
    ON CONFLICT (sid, key) DO UPDATE SET turn = excluded.turn, seq = excluded.seq)"""
_CHECKPOINT = """,
c AS (INSERT INTO cgraph_checkpoints (sid, turn, snapshot)
    SELECT s.key, %(checkpoint)s::int, %(snapshot)s::bytea FROM s
    ON CONFLICT (sid, turn) DO UPDATE SET snapshot = excluded.snapshot)"""
_TYPES = ("text",) * 7 + ("int", "float8", "text", "float8", "float8")
_OUTBOX = f""",
o AS (INSERT INTO {TABLE} SELECT u.* FROM s, unnest(
    {", ".join(f"%(o_{c})s::{t}[]" for c, t in zip(COLUMNS, _TYPES, strict=True))}) AS u
    ON CONFLICT (id) DO NOTHING)"""
"""A turn's deliveries (`Announcer`), in its last step's statement: written only when the
step is (the session found, the fence in force); one already there is kept."""
_RESULT = "\nSELECT (SELECT count(*) FROM s), (SELECT ok FROM ok), (SELECT new FROM n)"
"""(the step written, the fence in force, its events new): every piece is written from
`s`, its events' row too; not written with its events new is a session not found (or
deleted meanwhile)."""
_COMMITS = {
    (rewind, keys, checkpoint, fold, outbox): _STEP
    + (_FOLD if fold else _EVENTS)
    + (_REWIND if rewind else "")
    + (_KEYS if keys else "")
    + (_CHECKPOINT if checkpoint else "")
    + (_OUTBOX if outbox else "")
    + _RESULT
    for rewind in (False, True)
    for keys in (False, True)
    for checkpoint in (False, True)
    for fold in (False, True)
    for outbox in (False, True)
}
"""One step's statement, by what it writes besides its events and the snapshot (an undo's
rewind, idempotency keys, the turn's checkpoint, the turn's rows folded, its deliveries):
a step writes only what it has, in one round trip, and each is prepared once per
connection."""
APPEND = {
    keys: FENCED
    + _NEW
    + ",\ns AS (SELECT key FROM cgraph_sessions"
    + " WHERE id = %(sid)s AND (SELECT ok FROM ok) AND (SELECT new FROM n) FOR SHARE)"
    + _EVENTS
    + (_KEYS if keys else "")
    + _RESULT
    for keys in (False, True)
}
"""Events written ahead of a step, the snapshot unchanged (`append`): the session's row
locked, so that an append waiting for a delete of its session finds it gone (as a step's
update does) and writes no row of a session no longer there."""


class _Row(NamedTuple):
    """A row of the log this process wrote: its events' seqs, places and JSON."""

    first: int
    last: int
    msg: int | None
    msg_end: int | None
    text: str


class Runs:
    """Per session, the rows this process wrote since the turn's last fold, in a run (each
    begins where the one before ended): folded into one at the turn's end."""

    def __init__(self) -> None:
        self._runs: dict[str, list[_Row]] = {}

    def forget(self, session_id: str) -> None:
        """End the session's run: another process may have written since (a load), or a
        step was not written."""
        self._runs.pop(session_id, None)

    def step(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: bytes,
        turn_seq: int,
        checkpoint: int | None,
        rewind_to: int | None,
    ) -> dict[str, Any]:
        """The arguments of one step's statement (`commit_statement`): a step's row is
        plain JSON until its turn ends (`checkpoint`); then the turn's rows this process
        wrote are folded into one, deflated (`packing`)."""
        try:
            text = events_text(events) if events else None
        except ValueError as err:
            raise StoreError(f"session `{session_id}`: {err}") from err
        args = _arguments(session_id, events, snapshot, turn_seq, checkpoint, rewind_to)
        run = self._runs.pop(session_id, [])
        if text is None:
            args["data"] = None
            if checkpoint is None:  # nothing written: the run goes on
                self._runs[session_id] = run
            return args
        row = _Row(int(events[0].seq), int(events[-1].seq), args["msg"], args["msg_end"], text)
        if run and run[-1].last + 1 != row.first:
            run = []  # another writer's rows in between: not this run
        if checkpoint is None:
            args["data"] = text.encode()
            self._runs[session_id] = [*run, row]
            return args
        args["data"] = deflated(text)
        if run:
            rows = [*run, row]
            places = [p for r in rows for p in (r.msg, r.msg_end) if p is not None]
            args.update(
                fold_from=run[0].first,
                folded=len(run),
                fold_msg=min(places, default=None),
                fold_msg_end=max(places, default=None),
                fold_data=deflated(joined([r.text for r in rows])),
            )
        return args


def _arguments(
    session_id: str,
    events: Sequence[Event],
    snapshot: bytes,
    turn_seq: int,
    checkpoint: int | None,
    rewind_to: int | None,
) -> dict[str, Any]:
    """The arguments of one step's statement but its row's data (`Runs.step`)."""
    keyed = [(k, e) for e in events if (k := key_of(e)) is not None]
    places = [at for e in events if (at := place(e)) is not None]
    return {
        "sid": session_id,
        "snapshot": snapshot,
        "turn_seq": turn_seq,
        "at": float(last_at(events, 0.0)),
        "rewind": rewind_to,
        "checkpoint": checkpoint,
        "first": int(events[0].seq) if events else None,
        "last": int(events[-1].seq) if events else None,
        "msg": min(places, default=None),
        "msg_end": max(places, default=None),
        "data": None,
        "fold_from": None,
        "fence": None,
        "keys": [k for k, _ in keyed],
        "key_turns": [int(e.turn) for _, e in keyed],
        "key_seqs": [int(e.seq) for _, e in keyed],
    }


def commit_statement(args: dict[str, Any]) -> str:
    """The statement that writes a step with these arguments (`Runs.step`)."""
    return _COMMITS[
        (
            args["rewind"] is not None,
            bool(args["keys"]),
            args["checkpoint"] is not None,
            args["fold_from"] is not None,
            "o_id" in args,
        )
    ]


def outbox_arguments(deliveries: Sequence[Delivery]) -> dict[str, Any]:
    """The `_OUTBOX` arguments: a column of `deliveries` per argument."""
    rows = values(deliveries)
    return {f"o_{column}": [row[i] for row in rows] for i, column in enumerate(COLUMNS)}
