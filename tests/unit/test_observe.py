"""What a model call counts: the provider's tokens where it gave them, else cgraph's
estimate of the prompt and the reply; and what the call was for."""

from __future__ import annotations

from cgraph.observe import ModelCall
from cgraph.runtime.ports import estimate_tokens

SAID = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"})


def call(**given: object) -> ModelCall:
    fields: dict[str, object] = {"model": "m", "kind": "action", "state": "a", "started": 0.0}
    return ModelCall(**{**fields, "seconds": 0.1, "messages": SAID, **given})  # type: ignore[arg-type]


def test_the_providers_counts_are_the_usage() -> None:
    assert call(prompt_tokens=120, completion_tokens=7, reply="ok").usage() == (120, 7)


def test_without_them_the_prompt_and_reply_are_estimated() -> None:
    reply = "Hello! How can I help you today?"
    prompt = estimate_tokens("Be brief.") + estimate_tokens("hello there")
    assert call(reply=reply).usage() == (prompt, estimate_tokens(reply))
    parts = ({"role": "user", "content": [{"type": "text", "text": "hello there"}]},)
    assert call(messages=parts, reply="").usage() == (estimate_tokens("hello there"), 4)


def test_a_failed_call_counts_only_what_the_provider_said() -> None:
    assert call(error="Timeout").usage() == (0, 0)
    assert call(error="LLMError", prompt_tokens=30).usage() == (30, 0)


def test_extraction_and_summary_calls_are_told_from_the_turns() -> None:
    kinds = ("decision", "action", "start", "reflection", "extract", "summary")
    assert [call(kind=k).purpose for k in kinds] == [
        "turn",
        "turn",
        "turn",
        "turn",
        "extraction",
        "summary",
    ]
