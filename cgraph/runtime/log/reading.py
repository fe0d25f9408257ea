"""Reading the event log: the effective events, the transcript, the audit, and `Turn`s.

The log is append-only. Undoing (or cancelling) turn N appends an `undo` event; reading
the log folds it by dropping every earlier event of turns ≥ N. Everything a session
shows — transcript, audit, a turn's path — is derived from the log this way, so a
resumed session and a live one answer the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cgraph.runtime.state.records import (
    Decision,
    Event,
    RecalledMemory,
    TransitionRecord,
    Turn,
    message_of,
)
from cgraph.spec.names import END, START


def effective(events: Iterable[Event]) -> list[Event]:
    """The log as it stands after undos: undone turns' events are left out."""
    kept: list[Event] = []
    for event in events:
        if event.kind == "undo":
            turn = int(event.data.get("turn", event.turn))
            kept = [e for e in kept if e.turn < turn]
        kept.append(event)
    return kept


def transcript(events: Iterable[Event]) -> list[dict[str, str]]:
    """User messages and replies, in order, as chat messages."""
    return [m for m in map(message_of, events) if m is not None]


def transition_record(event: Event) -> TransitionRecord:
    data = event.data
    return TransitionRecord(
        turn=event.turn,
        from_state=data["from"],
        to_state=data["to"],
        exit_id=data["exit"],
        description=data.get("description", ""),
        reason=data.get("reason", ""),
        at=event.at,
        guard=data.get("guard"),
        capped=data.get("capped"),
        interrupts=bool(data.get("interrupts")),
        resumed=bool(data.get("resumed")),
    )


def audit(events: Iterable[Event]) -> list[TransitionRecord]:
    return [transition_record(e) for e in events if e.kind == "transition"]


def decisions(events: Iterable[Event]) -> list[Decision]:
    return [Decision(**e.data) for e in events if e.kind == "decision"]


def recalled(events: Iterable[Event]) -> list[RecalledMemory]:
    """The memories recalled, each once (by id, at its first recall and best score)."""
    found: dict[str, RecalledMemory] = {}
    for event in events:
        if event.kind != "recall":
            continue
        for memory in (RecalledMemory(**m) for m in event.data.get("memories", ())):
            seen = found.get(memory.id)
            if seen is None or (memory.score or 0.0) > (seen.score or 0.0):
                found[memory.id] = (
                    memory if seen is None else seen.model_copy(update={"score": memory.score})
                )
    return list(found.values())


def stored(events: Iterable[Event]) -> list[Mapping[str, Any]]:
    """The memories that memory extraction stored, as the log keeps them."""
    return [m for e in events if e.kind == "memory_stored" for m in e.data.get("memories", ())]


def turn_events(events: Sequence[Event], number: int) -> list[Event]:
    """The events of turn `number` (from an effective log, where turns only grow)."""
    start = len(events)
    while start > 0 and events[start - 1].turn >= number:
        start -= 1
    return [e for e in events[start:] if e.turn == number and e.kind != "undo"]


def build_turn(session_id: str, number: int, events: Sequence[Event]) -> Turn:
    """The `Turn` a user saw, rebuilt from that turn's events (a lasting note an earlier
    turn gave, marked `repeated`, is left out of its warnings)."""
    begin = _first(events, "user_message")
    end = _first(events, "turn_completed")
    reply = _last(events, "reply")
    transitions = audit(events)
    made = decisions(events)
    return Turn(
        session=session_id,
        number=number,
        user=None if begin.get("opening") else str(begin.get("text", "")),
        reply=str(reply.get("text", "")),
        path=_path(str(begin.get("state", "")), transitions, str(end.get("state", ""))),
        transitions=tuple(transitions),
        state=str(end.get("state", "")),
        recalled=tuple(recalled(events)),
        decisions=tuple(made),
        completed=bool(end.get("completed", False)),
        guard=end.get("guard"),
        llm_calls=sum(d.attempts for d in made),
        memory_calls=sum(int(e.data.get("calls", 0)) for e in events if is_extraction(e, number)),
        fallback=bool(reply.get("fallback", False)),
        warnings=tuple(
            dict.fromkeys(
                _warning(e)
                for e in events
                if _failed(e) and not e.data.get("repeated") and _of_turn(e, number)
            )
        ),
        tool_calls=tuple(_tool_call(e.data) for e in events if _model_call(e)),
        metadata=tuple(reply.get("metadata", ())),
        interrupted=tuple(end.get("interrupted", ())),
        clarified=bool(end.get("clarified")),
        slots=tuple(e.data for e in events if e.kind == "slots"),
        effects=_effects(events),
    )


_FAILURES = ("memory_error", "llm_error", "llm_notice", "tool_call")


def _of_turn(event: Event, number: int) -> bool:
    """An event about turn `number` (a background extraction's names its own turn)."""
    return event.data.get("turn", number) == number if event.kind == "memory_error" else True


def _failed(event: Event) -> bool:
    if event.kind == "tool_call":  # a model's failed call is answered by the model itself
        return event.data.get("status") == "skipped"
    if event.kind == "llm_error" and event.data.get("kind") == "extract":
        return False  # said once, by the extraction's own `memory_error`
    return event.kind in _FAILURES


def _model_call(event: Event) -> bool:
    return (
        event.kind == "tool_call"
        and event.data.get("by") == "model"
        and (event.data.get("status") != "started")
    )


def _effects(events: Sequence[Event]) -> tuple[dict[str, Any], ...]:
    """The side-effect states' calls, each with the arguments its write-ahead record holds
    (the outcome's event carries only the result)."""
    own = [e.data for e in events if e.kind == "tool_call" and "by" not in e.data]
    asked = {d.get("key"): d.get("arguments") for d in own if d.get("status") == "started"}
    return tuple(
        {"state": d.get("state"), **_tool_call({**d, "arguments": asked.get(d.get("key"), {})})}
        for d in own
        if d.get("status") in ("done", "failed")
    )


def _tool_call(data: dict[str, Any]) -> dict[str, Any]:
    """A model's tool call as `--jsonl` and `/why` show it."""
    keys = ("tool", "arguments", "status", "result", "error", "duration")
    return {key: data[key] for key in keys if key in data}


def _warning(event: Event) -> str:
    """A failure the turn survived, in words."""
    error = event.data.get("error", "?")
    if event.kind == "tool_call":
        return str(error)
    if event.kind == "llm_notice":
        return str(event.data.get("notice", "?"))
    if event.kind == "llm_error" and event.data.get("offline"):
        where = event.data.get("state", "?")
        return f"could not read a valid value from the message in {where} ({error}); asking again"
    if event.kind == "llm_error":
        return f"the model failed in {event.data.get('state', '?')}: {error}"
    if event.data.get("operation") == "extract":
        return f"memory extraction after this turn failed (the reply stands): {error}"
    return f"memory {event.data.get('operation', 'call')} failed: {error}"


def is_extraction(event: Event, turn: int | None = None) -> bool:
    """True for the event that closes a memory extraction (stored, or failed), of turn
    `turn` when given (one asked in the background is logged when its answer comes, in a
    later turn's events, marked with its own)."""
    if event.kind not in ("memory_stored", "memory_error") or "calls" not in event.data:
        return False
    return turn is None or event.data.get("turn", event.turn) == turn


def _path(start: str, transitions: Sequence[TransitionRecord], end: str) -> tuple[str, ...]:
    """The states this turn went through, from the one it began in to the one it ended in."""
    path = [start] if start and start != START else []
    for record in transitions:
        if record.to_state != END and (not path or path[-1] != record.to_state):
            path.append(record.to_state)
    if end and end not in (END, START) and (not path or path[-1] != end):
        path.append(end)  # a guard moved the turn back to its last user-facing state
    return tuple(path)


def _first(events: Sequence[Event], kind: str) -> dict[str, Any]:
    return next((e.data for e in events if e.kind == kind), {})


def _last(events: Sequence[Event], kind: str) -> dict[str, Any]:
    return next((e.data for e in reversed(events) if e.kind == kind), {})
