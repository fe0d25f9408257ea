"""What a session produces: turns, transitions, decisions and events, as plain data."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

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
    guard: str | None = None
    """For an `on_limit` route: the guard that took it."""
    capped: str | None = None
    """For a `max_visits` or `max_turns` route: the state capped (qualified)."""
    interrupts: bool = False
    """A `resume: true` exit: the conversation comes back to where it left."""
    resumed: bool = False
    """An interruption ended here: the conversation is back where it was."""


CLARIFY = "clarify"
"""The answer that asks the user which of a few options they meant, instead of guessing."""


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
    window: int = 0
    """Conversation messages (user and agent) the prompt held."""
    summary: bool = False
    """The prompt held a summary of earlier messages ahead of them."""
    why: dict[str, Any] = Field(default_factory=dict)
    """The reason as data (its kind and the figures it was made on), where the chooser
    gives one: what `reason` says in words."""

    @property
    def confidence(self) -> float | None:
        """The chosen option's confidence, 0–1; None where the chooser gives none (a model
        without scores) or chose no option (it asked)."""
        return self.scores.get(self.chosen)

    @property
    def asked(self) -> bool:
        """The choice was to ask the user which option they meant (`chosen` is `clarify`)."""
        return self.chosen == CLARIFY


def step_name(decision: Decision, state_type: str | None) -> str:
    """A decision's step in words: its state and the state's type, `check_pain (action)`.
    The request kind is added only where the model was asked something the type does not
    say, `emergency (annotation, asked as a decision)`; `START (start)` is no state."""
    kind = decision.kind
    if not state_type:
        return f"{decision.state} ({kind})"
    if kind in ("", state_type) or not decision.prompt_hash:
        return f"{decision.state} ({state_type})"
    return f"{decision.state} ({state_type}, asked as a {kind})"


def certainty(confidence: float | None, asked: bool) -> str:
    """How sure a choice was, in words after what it chose: " (asked the user)" for a
    clarifying question, " (confidence 0.82)" where the chooser gives one, else ""."""
    if asked:
        return " (asked the user)"
    return "" if confidence is None else f" (confidence {confidence:.2f})"


class RecalledMemory(Record):
    """A memory recalled during a turn, with its similarity score."""

    id: str
    text: str
    tier: str
    score: float | None = None


class Turn(Record):
    """The result of one user message."""

    session: str
    number: int
    user: str | None
    """The user's message; None on the opening turn of a graph that `speaks_first`."""
    reply: str
    """What the agent says to the user; "" means there is nothing to show. On the turn that
    reaches END it is never "": the model's parting words, else the ending action state's
    `say:`, else the lines of silent states passed this turn, else "Goodbye."."""
    path: tuple[str, ...]
    """States entered during this turn, in order (qualified inside sub-graphs)."""
    transitions: tuple[TransitionRecord, ...]
    state: str
    """Where the turn ended (on the turn that reaches END: the state that took the exit)."""
    recalled: tuple[RecalledMemory, ...] = ()
    decisions: tuple[Decision, ...] = ()
    completed: bool = False
    guard: str | None = None
    """The loop guard that stopped this turn, or routed it to its `on_limit` state."""
    llm_calls: int = 0
    """Calls that produced this turn's path and reply (a turn that stays costs one)."""
    memory_calls: int = 0
    """Calls that extracted memories after the reply (`memory.store`)."""
    fallback: bool = False
    """True when the reply is the graph's fallback because the model failed."""
    warnings: tuple[str, ...] = ()
    """Failures this turn survived (memory store down, model errors), in words."""
    tool_calls: tuple[dict[str, Any], ...] = ()
    """The model's tool calls: tool, arguments, status (done, failed, refused), result or
    error, duration in seconds."""
    metadata: tuple[str, ...] = ()
    """The replying state's `message_metadata` tags."""
    interrupted: tuple[str, ...] = ()
    """The states interruptions will go back to (`resume: true` exits), the next last."""
    clarified: bool = False
    """The reply asks which of a few exits the user meant, instead of guessing (the
    decision's `chosen` is `clarify`; the next message is judged against them first)."""
    slots: tuple[dict[str, Any], ...] = ()
    """Slot values taken from the message, per state that took them: `state`, `values`,
    and `corrected` (the values they replaced). `/why` detail, like `decisions`."""
    effects: tuple[dict[str, Any], ...] = ()
    """The tools side-effect states called this turn: `state`, `tool`, `arguments`,
    `status` (done, failed), `result` or `error`. `/why` detail, like `slots`."""

    def as_json(self) -> dict[str, Any]:
        """The turn as one JSON object (a line of `cgraph run --jsonl`): what was said, the
        path and moves, where it ended and why; of each decision, `choices` keeps its
        state, what it chose and that option's confidence (null where the chooser gives
        none, or it asked: `clarified`); the rest of `/why` stays in `decisions`."""
        return {
            "turn": self.number,
            "user": self.user,
            "reply": self.reply,
            "path": list(self.path),
            "transitions": [
                {"from": t.from_state, "to": t.to_state, "exit": t.exit_id, "reason": t.reason}
                for t in self.transitions
            ],
            "state": self.state,
            "recalled": [m.model_dump() for m in self.recalled],
            "session": self.session,
            "completed": self.completed,
            "guard": self.guard,
            "fallback": self.fallback,
            "warnings": list(self.warnings),
            "tool_calls": [dict(call) for call in self.tool_calls],
            "metadata": list(self.metadata),
            "interrupted": list(self.interrupted),
            "clarified": self.clarified,
            "choices": [
                {"state": d.state, "chosen": d.chosen, "confidence": d.confidence}
                for d in self.decisions
            ],
        }


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
    "llm_notice",
    "memory_error",
    "note",
    "annotation",
    "summary",
    "variables",
    "turn_completed",
    "undo",
    "decision",
    "slots",  # slot values taken from a message; `corrected` holds the values replaced
    "render_failed",
]


class Event(Record):
    """One entry of a session's append-only log."""

    seq: int
    session: str
    turn: int
    kind: EventKind
    at: float
    data: dict[str, Any] = Field(default_factory=dict)


_setattr = object.__setattr__


R = TypeVar("R", bound=BaseModel)


def trusted(kind: type[R], /, **values: Any) -> R:
    """A record built from values the runtime made itself, every field given, unvalidated.

    What `model_construct` does, without its per-field loop: every step emits several
    events and decisions, and that loop was a tenth of a step's cost. A test holds it
    equal to the validated model.
    """
    record = kind.__new__(kind)
    _setattr(record, "__dict__", values)
    _setattr(record, "__pydantic_fields_set__", set(values))
    _setattr(record, "__pydantic_extra__", None)
    _setattr(record, "__pydantic_private__", None)
    return record


def trusted_event(
    seq: int, session: str, turn: int, kind: EventKind, at: float, data: dict[str, Any]
) -> Event:
    """An event from trusted values (`trusted`)."""
    return trusted(Event, seq=seq, session=session, turn=turn, kind=kind, at=at, data=data)


def message_of(event: Event) -> dict[str, str] | None:
    """The chat message an event adds to the transcript: a user message or a reply."""
    if event.kind == "user_message" and not event.data.get("opening"):
        return {"role": "user", "content": str(event.data.get("text", ""))}
    if event.kind == "reply" and event.data.get("text"):
        return {"role": "assistant", "content": str(event.data["text"])}
    return None
