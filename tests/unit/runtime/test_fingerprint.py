"""The prompt fingerprint: hashed on from a kept beginning, the same as hashed afresh."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cgraph.runtime.ask import fingerprint
from cgraph.runtime.ask.fingerprint import PromptFacts, prompt_facts
from cgraph.runtime.ask.prompts import summary_message

SCHEMA = {"type": "object", "properties": {"exit": {"enum": ["a", "stay"]}}}


def afresh(messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any]) -> PromptFacts:
    """Every message hashed and counted again: what the kept beginnings must equal."""
    text = "\x00".join(f"{m['role']}\x01{m['content']}" for m in messages)
    digest = hashlib.sha256(json.dumps(schema, sort_keys=True).encode())
    digest.update(text.encode())
    window = sum(m["role"] in ("user", "assistant") for m in messages)
    summary = any(m["content"].startswith(fingerprint.SUMMARY_HEADING) for m in messages)
    return PromptFacts(digest.hexdigest()[:12], window, summary)


def said(role: str, text: str) -> dict[str, str]:
    return {"role": role, "content": text}


def test_prompts_that_share_a_beginning_hash_as_if_hashed_afresh() -> None:
    system, other = said("system", "You are A."), said("system", "You are B.")
    history = [said("user", "hi"), said("assistant", "hello"), said("user", "bye")]
    prompts = [
        [system, *history[:1], said("system", "context 1")],
        [system, *history[:1], said("system", "context 2")],  # only the end differs
        [system, *history, said("system", "context 3")],  # the history grew
        [other, *history, said("system", "context 3")],  # another system part
        [system, *history[1:], said("system", "context 4")],  # the window moved on
        [system, *history, said("system", "context 4")],  # ... and back
        [system, said("user", "hi"), said("assistant", "changed"), said("user", "bye")],
        [system],
        [],
    ]
    for messages in prompts:
        for schema in (SCHEMA, {**SCHEMA, "required": ["exit"]}):
            assert prompt_facts(messages, schema) == afresh(messages, schema)


def test_an_equal_message_that_is_another_object_still_matches_the_kept_beginning() -> None:
    system = said("system", "S")
    first = [system, said("user", "one"), said("assistant", "two"), said("system", "c")]
    again = [said("system", "S"), said("user", "one"), said("assistant", "two"), said("user", "3")]
    assert prompt_facts(first, SCHEMA) == afresh(first, SCHEMA)
    assert prompt_facts(again, SCHEMA) == afresh(again, SCHEMA)


def test_the_summary_and_the_window_are_counted_in_the_kept_beginning_too() -> None:
    system, summary = said("system", "S"), summary_message("- The user is Ann.")
    first = [system, summary, said("user", "a"), said("system", "c")]
    later = [system, summary, said("user", "a"), said("assistant", "b"), said("system", "c")]
    assert prompt_facts(first, SCHEMA) == afresh(first, SCHEMA)
    facts = prompt_facts(later, SCHEMA)
    assert facts == afresh(later, SCHEMA) and facts.summary and facts.window == 2


def test_the_kept_beginnings_are_bounded() -> None:
    for number in range(fingerprint.PREFIX_CACHE_SIZE * 2):
        prompt_facts([said("system", f"state {number}"), said("user", "x")], SCHEMA)
    assert len(fingerprint._PREFIXES) <= fingerprint.PREFIX_CACHE_SIZE
