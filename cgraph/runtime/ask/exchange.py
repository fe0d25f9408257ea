"""Asking the model one question: call, validate, re-ask once, fall back.

A model answer is never applied as it comes: `cgraph.runtime.ask.answers` checks it against the
exits offered. An invalid answer is re-asked once with the error quoted; a second failure,
or an `LLMError` after the backend's own retries, gives an `Answered` with no value and the caller
falls back (an action state stays with its fallback reply; a silent state stops the turn).
Failures are returned as events for the log, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from cgraph.errors import LLMError
from cgraph.runtime.ask.answers import CAPS, Answer, AnswerError, parse_answer
from cgraph.runtime.ask.fingerprint import prompt_facts
from cgraph.runtime.needs import Complete, Steps
from cgraph.runtime.ports import ChatModel, LLMRequest
from cgraph.runtime.state.outcomes import Effects, Emit, decided
from cgraph.runtime.state.records import Decision, trusted

T = TypeVar("T")


# Not slotted: a slotted frozen generic cannot take the `__orig_class__` that `Asked(...)`
# sets on what it builds.
@dataclass(frozen=True)
class Answered(Generic[T]):
    """What a question got: a validated answer of the model (`Asked`) or a checked choice
    of a chooser (`Decided`), None when the engine must fall back, and how it was reached."""

    value: T | None
    decision: Decision
    failures: tuple[Emit, ...] = ()
    """An `llm_error` event per failed attempt, and an `llm_notice` per thing the user
    should hear (a structured-output mode the server refused, a reply cut to its cap)."""

    @property
    def effects(self) -> Effects:
        """What the log keeps of the question: its failures, then the decision."""
        return (*self.failures, decided(self.decision))


Asked = Answered[Answer]
"""The model's validated answer to one question."""


Talk = Callable[[LLMRequest], Steps[tuple[LLMRequest, str]]]
"""A first attempt that is a conversation (tool calls): the request as it ended, the answer."""


def ask(model: ChatModel, request: LLMRequest, *, talk: Talk | None = None) -> Steps[Asked]:
    """Call the model, validate, re-ask once with the error quoted, else fall back.

    With `talk`, the first attempt is `talk(request)`; a re-ask continues from the request
    as the talk left it, offering no more tools.
    """
    attempts = 0
    current = request
    answer: Answer | None = None
    failures: list[Emit] = []
    for attempt in (1, 2):
        attempts = attempt
        try:
            if talk is not None and attempt == 1:
                current, raw = yield from talk(request)
            else:
                raw = yield Complete(model, current)
        except LLMError as err:
            failures += _notices(model, request)
            lasting = {"permanent": True} if err.permanent else {}
            failures.append(_failure(request, err.message, **lasting))
            break  # the backend already retried; asking again would only repeat the wait
        failures += _notices(model, request)
        try:
            parsed = parse_answer(raw, request)
        except AnswerError as err:
            wrong = {"invalid_answer": str(raw)[:500], "attempt": attempt}
            failures.append(_failure(request, err.message, **wrong))
            current = _reask(current, raw, err.message)
            continue
        answer = parsed
        failures += [_notice(request, _cut(name)) for name in parsed.cut]
        if not parsed.slot_problems or attempt == 2:
            break
        # An invalid slot value is asked for once more; the answer so far stands meanwhile.
        problems = "; ".join(parsed.slot_problems)
        # Offline, no model failed: the user's message held a value the slot refuses.
        offline = {"offline": True} if model.capabilities.offline else {}
        wrong = {"invalid_answer": str(raw)[:500], "attempt": 1, **offline}
        failures.append(_failure(request, problems, **wrong))
        current = _reask(current, raw, problems, " (answer null for a value you cannot give)")
    return Asked(answer, _decision(model, request, answer, attempts), tuple(failures))


def _failure(request: LLMRequest, error: str, **extra: object) -> Emit:
    data = {"state": request.state, "kind": request.kind, "error": error, **extra}
    return Emit("llm_error", data)


def _notices(model: ChatModel, request: LLMRequest) -> list[Emit]:
    """What the backend wants said once (a structured-output mode the server refused)."""
    return [_notice(request, str(text)) for text in model.notices()]


def _notice(request: LLMRequest, text: str) -> Emit:
    return Emit("llm_notice", {"state": request.state, "kind": request.kind, "notice": text})


def _cut(name: str) -> str:
    return f"the model's {name} was over {CAPS[name]} characters and was cut"


def _reask(request: LLMRequest, raw: str, error: str, hint: str = "") -> LLMRequest:
    """The request again, the answer and why it was refused appended (with `hint` for the
    model); the question records why, as a chooser that reads messages itself sees it."""
    asked = replace(request.question, rejected=error) if request.question else None
    follow_up = (
        {"role": "assistant", "content": str(raw or "")},
        {
            "role": "user",
            "content": f"[cgraph] Your answer was rejected: {error}{hint}. "
            "Answer again with one JSON object that follows the schema.",
        },
    )
    return replace(request, messages=request.messages + follow_up, tools=(), question=asked)


def _decision(
    model: ChatModel, request: LLMRequest, answer: Answer | None, attempts: int
) -> Decision:
    facts = prompt_facts(request.messages, request.schema)
    return trusted(  # every field is built right here: skip validation
        Decision,
        state=request.state,
        kind=request.kind,
        chosen=answer.exit if answer else "",
        reason=answer.reason if answer else "the model failed; fallback",
        candidates=request.exit_ids,
        scores=answer.scores if answer else {},
        prompt_hash=facts.hash,
        model=str(model.name),
        attempts=attempts,
        fallback=answer is None,
        window=facts.window,
        summary=facts.summary,
        why={},
    )


def engine_decision(state: str, kind: str, chosen: str, reason: str) -> Emit:
    """A choice made without the model (a single way out): no call, no prompt."""
    # Taken at most steps: the log entry is built from the record's defaults directly.
    record = {**_ENGINE_DECISION, "state": state, "kind": kind, "chosen": chosen}
    return Emit("decision", {**record, "reason": reason, "candidates": (chosen,), "scores": {}})


_ENGINE_DECISION = decided(
    Decision.model_construct(state="", kind="", chosen="", reason="", attempts=0)
).data
