"""The session's state: a frozen value, and how it is stored (a snapshot, versioned).

The transcript is *not* here: it lives in the event log. The state holds where the session
is (a stack of frames, one per graph entered), its variables, notes, tags, counters and the
window of history its prompts show; `TurnScratch` holds what the turn in progress keeps
between its steps. Both are frozen (named tuples: a step makes several new states, and
`_replace` costs a quarter of `dataclasses.replace`): the applier
(`cgraph.runtime.turn.applying`) is the only code that makes the next state, from the
last one and an outcome. A stored snapshot
is the state's dict plus where the log stands (`LogPosition`) and a version; an older
version is read through one migration table (`cgraph.runtime.log.snapshots`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from cgraph.spec.names import qualify

_EMPTY: Mapping[str, Any] = {}  # a shared default: states never change a mapping in place
MAX_NOTES = 20  # older reflection notes stay in the event log, not in prompts
SNAPSHOT_VERSION = 2
"""1: no version; the whole log was read to find the transcript and the notes given."""


class Frame(NamedTuple):
    """Where the session is inside one graph: `graph` is "" for the root file."""

    graph: str
    state: str
    returned: bool = False
    """True on a `graph` state whose sub-graph has just reached its END."""
    slots: Mapping[str, Any] = _EMPTY
    """A sub-graph's own slots while it runs (the root's live in the session's variables)."""
    resumes: bool = False
    """A state a `resume: true` exit entered: when the sub-graph it enters ends, the
    interruption ends (the conversation goes back to where it was)."""
    run: str = ""
    """For a sub-graph: which entry of it this is (the turn and step that entered it), so
    the interruptions opened inside this run are closed when it ends."""


class HistoryMarks(NamedTuple):
    """Where the prompts' history window stands, and the running summary before it."""

    history_start: int = 0
    """First transcript message still shown in prompts (the window moves in steps)."""
    context_start: int = 0
    """The window never starts before this message (a state's `context: reset` moves it)."""
    summary: str = ""
    """The running summary of the messages before `summary_upto`, shown ahead of the window."""
    summary_upto: int = 0


class TurnScratch(NamedTuple):
    """What the turn in progress keeps between its steps (a new turn starts it afresh)."""

    pending: str | None = None
    """The user message of a turn that has started but not finished (crash or Ctrl-C)."""
    step: int = 0
    """Steps committed in the turn; part of every idempotency key."""
    transitions: int = 0
    reflections: int = 0
    entered: bool = False
    """The current state was entered during this turn."""
    said: tuple[str, ...] = ()
    """Lines silent states said this turn (`say:`), put before the turn's reply."""
    limited: str | None = None
    """The guard whose `on_limit` route was taken this turn (a second guard stops the turn)."""
    context: str | None = None
    """The `context:` strategy of a state just entered, applied before its first step."""
    offered: bool = False
    """A sub-graph was entered this turn and no state of it has read the message yet: its
    first state that talks reads it (it fills what it can)."""
    resumed: bool = False
    """The current state was entered this turn by the end of an interruption (`RESUME`)."""
    handed: str = ""
    """The state that handed this turn's message, unanswered, to the current one (a
    `handoff: true` exit; qualified), or ""."""
    handed_to: tuple[str, ...] = ()
    """The states this turn's message was handed to, in order: each at most once."""


class SessionState(NamedTuple):
    """Where a session stands; see the module docstring."""

    stack: tuple[Frame, ...]
    variables: Mapping[str, Any] = _EMPTY
    """Never changed in place: a new state holds a new mapping."""
    notes: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    visits: Mapping[str, int] = _EMPTY
    turn: int = 0
    started: bool = False
    completed: bool = False
    last_action: tuple[Frame, ...] | None = None
    """The stack at the last user-facing state: where a guard stops a turn."""
    marks: HistoryMarks = HistoryMarks()
    turns_here: int = 0
    """Turns that ended in the current state since it was entered (for `max_turns`)."""
    noted: tuple[str, ...] = ()
    """Lasting notes given (a model that calls no tools): a turn's warning once a session."""
    interrupted: tuple[tuple[Frame, ...], ...] = ()
    """Where interruptions left the conversation (`resume: true` exits), the latest last:
    each stack is taken up again when its interruption ends."""
    asked: tuple[str, ...] = ()
    """The exits the last turn's clarifying question named (its reply asked which one the
    user meant): the next message is judged against them first, and is not asked again."""
    correcting: Mapping[str, Any] = _EMPTY
    """Slot values the last turn asked to confirm (`confirm_correction`): the next message
    changes them or keeps the old ones."""
    clarifications: int = 0
    """Clarifying questions asked in the current state since it was entered (a `RESUME`
    takes the state up again with its count)."""
    scratch: TurnScratch = TurnScratch()

    @property
    def frame(self) -> Frame:
        return self.stack[-1]

    @property
    def here(self) -> str:
        """The current state's qualified name (`file#state` inside a sub-graph)."""
        return qualify(self.frame.graph, self.frame.state)

    @property
    def pending(self) -> str | None:
        return self.scratch.pending

    @property
    def readable(self) -> Mapping[str, Any]:
        """What templates and conditions read: the session's variables, then the slots of
        each sub-graph running now (the innermost win over the root's of the same name)."""
        frames = [f.slots for f in self.stack if f.graph and f.slots]
        if not frames:
            return self.variables
        merged = dict(self.variables)
        for values in frames:
            merged.update(values)
        return merged

    @property
    def waiting(self) -> tuple[str, ...]:
        """The states interruptions will go back to, the one taken up next last."""
        return tuple(qualify(s[-1].graph, s[-1].state) for s in self.interrupted)

    def with_scratch(self, **changes: Any) -> SessionState:
        return self._replace(scratch=self.scratch._replace(**changes))

    def to_dict(self) -> dict[str, Any]:
        """The state as stored: flat keys (the layout of version 1, plus its new fields)."""
        scratch, marks = self.scratch, self.marks
        return {
            "stack": [_frame(f) for f in self.stack],
            "variables": self.variables,
            "notes": list(self.notes),
            "annotations": list(self.annotations),
            "visits": dict(self.visits),
            "turn": self.turn,
            "started": self.started,
            "completed": self.completed,
            "pending": scratch.pending,
            "step": scratch.step,
            "transitions": scratch.transitions,
            "reflections": scratch.reflections,
            "entered": scratch.entered,
            "last_action": [_frame(f) for f in self.last_action] if self.last_action else None,
            "history_start": marks.history_start,
            "context_start": marks.context_start,
            "summary": marks.summary,
            "summary_upto": marks.summary_upto,
            "turns_here": self.turns_here,
            "said": list(scratch.said),
            "limited": scratch.limited,
            "context_due": scratch.context,
            "noted": list(self.noted),
            "interrupted": [[_frame(f) for f in stack] for stack in self.interrupted],
            "asked": list(self.asked),
            "correcting": dict(self.correcting),
            "clarifications": self.clarifications,
            "offered": scratch.offered,
            "resumed": scratch.resumed,
            "handed": scratch.handed,
            "handed_to": list(scratch.handed_to),
            "version": SNAPSHOT_VERSION,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionState:
        """A state from a stored snapshot of this version (`read_snapshot` migrates older)."""
        last = data.get("last_action")
        return cls(
            stack=tuple(Frame(**f) for f in data["stack"]),
            variables=dict(data.get("variables", {})),
            notes=tuple(data.get("notes", ())),
            annotations=tuple(data.get("annotations", ())),
            visits=dict(data.get("visits", {})),
            turn=int(data.get("turn", 0)),
            started=bool(data.get("started", False)),
            completed=bool(data.get("completed", False)),
            last_action=tuple(Frame(**f) for f in last) if last else None,
            marks=HistoryMarks(
                int(data.get("history_start", 0)),
                int(data.get("context_start", 0)),
                str(data.get("summary", "")),
                int(data.get("summary_upto", 0)),
            ),
            turns_here=int(data.get("turns_here", 0)),
            noted=tuple(data.get("noted", ())),
            interrupted=tuple(
                tuple(Frame(**f) for f in stack) for stack in data.get("interrupted", ())
            ),
            asked=tuple(data.get("asked", ())),
            correcting=dict(data.get("correcting", {})),
            clarifications=int(data.get("clarifications", 0)),
            scratch=TurnScratch(
                pending=data.get("pending"),
                step=int(data.get("step", 0)),
                transitions=int(data.get("transitions", 0)),
                reflections=int(data.get("reflections", 0)),
                entered=bool(data.get("entered", False)),
                said=tuple(data.get("said", ())),
                limited=data.get("limited"),
                context=data.get("context_due"),
                offered=bool(data.get("offered", False)),
                resumed=bool(data.get("resumed", False)),
                handed=str(data.get("handed", "")),
                handed_to=tuple(data.get("handed_to", ())),
            ),
        )


@dataclass(frozen=True, slots=True)
class LogPosition:
    """Where the session's log stands, stored beside the state: the next event's `seq`,
    the number of messages of the transcript, and the `seq` where the latest turn begins
    (a session loads its log from there on)."""

    seq: int = 0
    messages: int = 0
    turn_seq: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"seq": self.seq, "messages": self.messages, "turn_seq": self.turn_seq}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LogPosition:
        return cls(
            int(data.get("seq", 0)), int(data.get("messages", 0)), int(data.get("turn_seq", 0))
        )


def stored(state: SessionState, position: LogPosition) -> dict[str, Any]:
    """What a store keeps of a session after a step: its state and its log's position."""
    return {**state.to_dict(), **position.to_dict()}


def dumps(state: SessionState, position: LogPosition) -> str:
    return json.dumps(stored(state, position), separators=(",", ":"), default=str)


def _frame(frame: Frame) -> dict[str, Any]:
    kept: dict[str, Any] = {"graph": frame.graph, "state": frame.state}
    kept["returned"] = frame.returned
    if frame.slots:
        kept["slots"] = dict(frame.slots)
    if frame.resumes:
        kept["resumes"] = True
    if frame.run:
        kept["run"] = frame.run
    return kept


_SCALARS = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """A tool result or variable as plain JSON data (unknown objects become text)."""
    if type(value) in _SCALARS:
        return value
    if type(value) is dict and all(
        type(k) is str and type(v) in _SCALARS for k, v in value.items()
    ):
        return dict(value)  # the usual `set:` values: plain JSON already, no round trip
    return json.loads(json.dumps(value, default=str))
