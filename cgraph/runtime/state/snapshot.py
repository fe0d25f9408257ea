"""The small, JSON-serialisable state of a running session, replaced at every step.

The transcript is *not* here: it lives in the event log. A snapshot holds only where the
session is (a stack of frames, one per graph entered), its variables, notes, tags,
counters and the bookkeeping of a turn in progress, so a checkpoint stays a few hundred
bytes however long the conversation gets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cgraph.spec.names import qualify

MAX_NOTES = 20  # older reflection notes stay in the event log, not in prompts
SNAPSHOT_VERSION = 2
"""1: no version; the whole log was read to find the transcript and the notes given."""


@dataclass(slots=True)
class Frame:
    """Where the session is inside one graph: `graph` is "" for the root file."""

    graph: str
    state: str
    returned: bool = False
    """True on a `graph` state whose sub-graph has just reached its END."""


@dataclass(slots=True)
class HistoryMarks:
    """Where the prompts' history window stands, and the running summary before it."""

    history_start: int = 0
    context_start: int = 0
    summary: str = ""
    summary_upto: int = 0


@dataclass(slots=True)
class Snapshot:
    stack: list[Frame]
    variables: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    visits: dict[str, int] = field(default_factory=dict)
    turn: int = 0
    seq: int = 0
    """The next event's sequence number (never rolled back, also not by undo)."""
    started: bool = False
    completed: bool = False
    pending: str | None = None
    """The user message of a turn that has started but not finished (crash or Ctrl-C)."""
    step: int = 0
    """Steps committed in the turn in progress; part of every idempotency key."""
    transitions: int = 0
    reflections: int = 0
    entered: bool = False
    """The current state was entered during this turn."""
    last_action: list[Frame] | None = None
    """The stack at the last user-facing state: where a guard stops a turn."""
    history_start: int = 0
    """First transcript message still shown in prompts (the window moves in steps)."""
    context_start: int = 0
    """The window never starts before this message (a state's `context: reset` moves it)."""
    summary: str = ""
    """The running summary of the messages before `summary_upto`, shown ahead of the window."""
    summary_upto: int = 0

    def history_marks(self) -> HistoryMarks:
        return HistoryMarks(self.history_start, self.context_start, self.summary, self.summary_upto)

    def keep_history_marks(self, marks: HistoryMarks) -> None:
        self.history_start, self.context_start = marks.history_start, marks.context_start
        self.summary, self.summary_upto = marks.summary, marks.summary_upto

    turns_here: int = 0
    """Turns that ended in the current state since it was entered (for `max_turns`)."""
    said: list[str] = field(default_factory=list)
    """Lines silent states said this turn (`say:`), put before the turn's reply."""
    limited: str | None = None
    """The guard whose `on_limit` route was taken this turn (a second guard stops the turn)."""
    turn_seq: int = 0
    """The `seq` of the latest turn's first event: a session loads its log from there on."""
    messages: int = 0
    """How many messages the transcript holds (the events hold them; the store indexes
    each by its place)."""
    noted: list[str] = field(default_factory=list)
    """Lasting notes the session has given (a model that calls no tools): each is a turn's
    warning once, and later events of it are marked `repeated`."""
    version: int = SNAPSHOT_VERSION

    @property
    def frame(self) -> Frame:
        return self.stack[-1]

    def to_dict(self) -> dict[str, Any]:
        # By hand: `dataclasses.asdict` deep-copies every value and costs more than the
        # SQLite commit itself. Values are only read (serialised) by the store.
        return {
            "stack": [_frame(f) for f in self.stack],
            "variables": self.variables,
            "notes": list(self.notes),
            "annotations": list(self.annotations),
            "visits": dict(self.visits),
            "turn": self.turn,
            "seq": self.seq,
            "started": self.started,
            "completed": self.completed,
            "pending": self.pending,
            "step": self.step,
            "transitions": self.transitions,
            "reflections": self.reflections,
            "entered": self.entered,
            "last_action": [_frame(f) for f in self.last_action] if self.last_action else None,
            "history_start": self.history_start,
            "context_start": self.context_start,
            "summary": self.summary,
            "summary_upto": self.summary_upto,
            "turns_here": self.turns_here,
            "said": list(self.said),
            "limited": self.limited,
            "turn_seq": self.turn_seq,
            "messages": self.messages,
            "noted": list(self.noted),
            "version": self.version,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snapshot:
        values = dict(data)
        values["stack"] = [Frame(**f) for f in data["stack"]]
        last = data.get("last_action")
        values["last_action"] = [Frame(**f) for f in last] if last else None
        return cls(**values)

    @classmethod
    def loads(cls, text: str) -> Snapshot:
        return cls.from_dict(json.loads(text))

    def begin_turn(self, message: str) -> None:
        self.turn += 1
        self.pending, self.step, self.transitions, self.reflections = message, 0, 0, 0
        self.entered, self.said, self.limited = False, [], None

    def mark_user_facing(self) -> None:
        self.last_action = copy_frames(self.stack)

    def back_to_user_facing(self) -> None:
        """Where a stopped turn ends: the last user-facing state, not entered this turn."""
        if self.last_action:
            self.stack = copy_frames(self.last_action)
        self.entered = False

    def set_variables(self, values: dict[str, Any]) -> None:
        self.variables = {**self.variables, **values}

    def adopt_variables(self, declared: dict[str, Any]) -> None:
        """A sub-graph's declared variables join the session's, without overwriting."""
        missing = {k: v for k, v in declared.items() if k not in self.variables}
        if missing:
            self.variables = {**self.variables, **jsonable(missing)}

    def add_note(self, note: str) -> None:
        self.notes = [*self.notes, note][-MAX_NOTES:]

    def add_tags(self, tags: tuple[str, ...]) -> None:
        self.annotations = [*self.annotations, *(t for t in tags if t not in self.annotations)]


def copy_frames(frames: list[Frame]) -> list[Frame]:
    """Frames are changed in place as the session moves: a saved stack is a copy."""
    return [Frame(f.graph, f.state, f.returned) for f in frames]


def _frame(frame: Frame) -> dict[str, Any]:
    return {"graph": frame.graph, "state": frame.state, "returned": frame.returned}


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


def here(snap: Snapshot) -> str:
    frame = snap.frame
    return qualify(frame.graph, frame.state)
