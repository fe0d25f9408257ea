"""The model's raw text → a checked `Answer`, or an `AnswerError` saying what was wrong.

Nothing a model writes is trusted: the text must be one JSON object, the exit one of the
ids offered (or "stay" where staying is allowed, "clarify" where asking is), a staying
reply and a clarifying question non-empty. The error
message is quoted back to the model when the engine re-asks.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from cgraph.errors import CgraphError
from cgraph.runtime.ports import CLARIFY, STAY, LLMRequest
from cgraph.spec import slots
from cgraph.spec.limits import readable
from cgraph.spec.model import TIERS, Tier

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class AnswerError(CgraphError):
    """A model's answer broke the contract of its request."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A validated answer; `exit` is an offered id or "stay"."""

    exit: str = ""
    reason: str = ""
    reply: str = ""
    note: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    memories: tuple[tuple[Tier, str], ...] = ()
    """(tier, text) pairs, for extract requests."""
    cut: tuple[str, ...] = ()
    """Fields that were over their size cap and were cut (`reason`, `reply`, `note`)."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values the answer gives (valid ones only; null means "not said")."""
    slot_problems: tuple[str, ...] = ()
    """Why the other values were refused (the engine re-asks once, then leaves them unset)."""


# A grammar keeps a small model's answer valid JSON but not short: a runaway field is cut.
CAPS = {"reason": 1_000, "reply": 4_000, "note": 2_000}
CUT_MARK = " […]"


def parse_answer(raw: str, request: LLMRequest) -> Answer:
    """Validate `raw` against `request`; raise `AnswerError` with a message for the model."""
    data = _json_object(raw)
    if request.kind == "extract":
        return Answer(memories=_memories(data))
    exit_id = _exit(data, request)
    reason = _text(data, "reason")
    scores = _scores(data)
    if request.kind == "reflection":
        note = _text(data, "note")
        if not note:
            raise AnswerError('"note" is empty: write the internal note')
        return _capped(Answer(exit=exit_id, reason=reason, note=note, scores=scores))
    reply = _text(data, "reply")
    if exit_id == STAY and not reply:
        raise AnswerError('"reply" is empty: when "exit" is "stay" the reply is required')
    if exit_id == CLARIFY and not reply:
        raise AnswerError('"reply" is empty: when "exit" is "clarify" the reply is your question')
    values, problems = _slots(data, request)
    waiting = request.asked.waits_for(exit_id, values)
    if waiting:
        names = ", ".join(f"`{n}`" for n in waiting)
        raise AnswerError(
            f'"exit" is `{exit_id}`, which waits until {names} is given: stay and ask for it'
            " (only an exit marked early may be taken before)"
        )
    return _capped(
        Answer(
            exit=exit_id,
            reason=reason,
            reply=reply,
            scores=scores,
            slots=values,
            slot_problems=problems,
        )
    )


def _slots(data: dict[str, Any], request: LLMRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The valid, non-null slot values of the answer, and a problem per invalid one."""
    given = data.get("slots")
    if not request.slots or given is None:
        return {}, ()
    if not isinstance(given, dict):
        return {}, ('"slots" must be an object of slot values',)
    return check_slots(given, request.slots)


def check_slots(
    given: dict[str, Any], schemas: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The valid, non-null values of `given` (as their slots keep them), and a problem
    per value a slot refuses; a slot not asked for is ignored, as a null is "not said"."""
    values, problems = {}, []
    for name, value in given.items():
        schema = schemas.get(str(name))
        if schema is None or value is None:
            continue
        slot = slots.from_answer_schema(schema)
        kept = slots.normalised(slot, value)
        problem = slots.problem(slot, kept)
        if kept is None:  # an empty list, a record of nulls: not said
            continue
        if problem is None:
            values[str(name)] = kept
            continue
        if slot.type == "array" and isinstance(kept, list):
            # The items given right are kept; the others are asked for.
            good = slots.valid_items(slot, kept)
            if good:
                values[str(name)] = good
            problems += [f"slot `{name}`: {p}" for p in slots.item_problems(slot, kept)]
        else:
            problems.append(f"slot `{name}`: {problem}")
    return values, tuple(problems)


def _capped(answer: Answer) -> Answer:
    """`answer` with every text over its cap cut, and the cut fields named."""
    long = {k: v for k, v in CAPS.items() if len(getattr(answer, k)) > v}
    if not long:
        return answer
    cut = {k: getattr(answer, k)[:v].rstrip() + CUT_MARK for k, v in long.items()}
    return replace(answer, **cut, cut=tuple(long))


def _json_object(raw: str) -> dict[str, Any]:
    text = (raw or "").strip()
    if not text:
        raise AnswerError("the answer was empty: answer with one JSON object")
    fenced = _FENCE.match(text)
    if fenced:  # some models wrap JSON in a code fence even when told not to
        text = fenced.group(1)
    try:
        data = readable(json.loads(text, strict=False))  # a raw newline is still meant
    except json.JSONDecodeError as err:
        raise AnswerError(f"the answer is not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise AnswerError(f"the answer must be a JSON object, not {type(data).__name__}")
    return data


def _exit(data: dict[str, Any], request: LLMRequest) -> str:
    value = data.get("exit")
    allowed = request.answers
    if not isinstance(value, str) or not value:
        raise AnswerError(f'"exit" is missing: it must be one of {", ".join(allowed)}')
    if value not in allowed:
        raise AnswerError(f'"exit" is `{value}`, which is not one of {", ".join(allowed)}')
    return value


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AnswerError(f'"{key}" must be a string')
    return value.strip()


def _scores(data: dict[str, Any]) -> dict[str, float]:
    value = data.get("scores")
    if not isinstance(value, dict):
        return {}  # scores are an optional explanation; a bad one is dropped, not an error
    return {
        str(k): float(v)
        for k, v in value.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def _memories(data: dict[str, Any]) -> tuple[tuple[Tier, str], ...]:
    items = data.get("memories")
    if not isinstance(items, list):
        raise AnswerError('"memories" must be a list of {"tier", "text"} objects')
    found: list[tuple[Tier, str]] = []
    for item in items:
        if not isinstance(item, dict):
            raise AnswerError('each memory must be an object with "tier" and "text"')
        tier = next((t for t in TIERS if t == item.get("tier")), None)
        if tier is None:
            wrong = item.get("tier")
            raise AnswerError(f"memory tier `{wrong}` is not one of {', '.join(TIERS)}")
        text = item.get("text")
        if isinstance(text, str) and text.strip():
            found.append((tier, text.strip()))
    return tuple(found)


def answer_schema(
    kind: str, exit_ids: tuple[str, ...], slot_schemas: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON Schema sent as structured output; strict-mode compatible (all keys required).

    With `slot_schemas`, an action answer also fills `"slots"`: one nullable property each.
    """
    if kind == "extract":
        memory = _object({"tier": {"type": "string", "enum": list(TIERS)}, "text": _STR})
        return _object({"memories": {"type": "array", "items": memory}})
    exit_field = {"type": "string", "enum": list(exit_ids)}
    if kind == "action" and slot_schemas:
        slots_field = _object(dict(slot_schemas))
        return _object({"exit": exit_field, "reason": _STR, "reply": _STR, "slots": slots_field})
    if kind == "action":
        return _object({"exit": exit_field, "reason": _STR, "reply": _STR})
    if kind == "reflection":
        return _object({"note": _STR, "exit": exit_field, "reason": _STR})
    return _object({"exit": exit_field, "reason": _STR})


_STR: dict[str, Any] = {"type": "string"}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for."""

    id: str
    name: str
    arguments: Any
    """The parsed arguments (a mapping when the model wrote valid JSON), else its text."""


def tool_calls_of(raw: str) -> tuple[ToolCall, ...]:
    """The calls in an answer, or () when it is an answer (or not JSON at all)."""
    try:
        data = readable(json.loads(raw))
    except (TypeError, ValueError):
        return ()
    calls = data.get("tool_calls") if isinstance(data, dict) else None
    if not isinstance(calls, list) or not calls:
        return ()
    return tuple(_call(index, item) for index, item in enumerate(calls))


def _call(index: int, item: Any) -> ToolCall:
    item = item if isinstance(item, dict) else {}
    arguments = item.get("arguments", {})
    if isinstance(arguments, str):
        # Text that is not JSON is kept as it is: the model is told so.
        with contextlib.suppress(ValueError):
            arguments = readable(json.loads(arguments or "{}"))
    return ToolCall(str(item.get("id") or f"call_{index}"), str(item.get("name", "")), arguments)
