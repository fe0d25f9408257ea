"""What a session produces: turns, transitions, decisions and events, as plain data."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class TransitionRecord(Record):
    """One audited move from a state to the next."""

    turn: int
    from_state: str
    to_state: str
    exit_id: str
    description: str
    reason: str
    at: float
    """Unix time."""


class Decision(Record):
    """How one exit choice was made, for `/why`."""

    state: str
    kind: str
    chosen: str
    reason: str
    candidates: tuple[str, ...] = ()
    scores: dict[str, float] = Field(default_factory=dict)
    prompt_hash: str = ""
    model: str = ""
    attempts: int = 1
    fallback: bool = False


class RecalledMemory(Record):
    id: str
    text: str
    tier: str
    score: float | None = None


class Turn(Record):
    """The result of one user message."""

    session: str
    number: int
    user: str
    reply: str
    path: tuple[str, ...]
    """States entered during this turn, in order (qualified inside sub-graphs)."""
    transitions: tuple[TransitionRecord, ...]
    state: str
    """Where the turn ended."""
    recalled: tuple[RecalledMemory, ...] = ()
    decisions: tuple[Decision, ...] = ()
    completed: bool = False
    guard: str | None = None
    """The loop guard that stopped this turn, if any."""
    llm_calls: int = 0
    """Calls that produced this turn's path and reply (a turn that stays costs one)."""
    memory_calls: int = 0
    """Calls that extracted memories after the reply (`memory.store`)."""
    fallback: bool = False
    """True when the reply is the graph's fallback because the model failed."""

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


EventKind = Literal[
    "session_started",
    "user_message",
    "transition",
    "reply",
    "tool_call",
    "recall",
    "memory_stored",
    "guard",
    "llm_error",
    "memory_error",
    "note",
    "annotation",
    "variables",
    "turn_completed",
    "undo",
    "decision",
]


class Event(Record):
    """One entry of a session's append-only log."""

    seq: int
    session: str
    turn: int
    kind: EventKind
    at: float
    data: dict[str, Any] = Field(default_factory=dict)
