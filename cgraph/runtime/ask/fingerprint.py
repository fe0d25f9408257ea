"""What a decision records of the prompt it was made on: a hash, the window, the summary.

Every question hashes its whole prompt (for `/why` and replays), and a prompt carries the
conversation so far, so hashing it afresh each time cost more as the conversation grew.
Consecutive prompts of one state differ only at the end: the same system part, the same
history with a few new messages, a new closing context. The hash's running state is kept
after the last-but-one message, and a later prompt that starts with those very messages
hashes only what follows. The figures are the same as hashing everything again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from cgraph.runtime.ask.prompts import SUMMARY_HEADING

PREFIX_CACHE_SIZE = 64
"""Prompt beginnings kept (per schema and system part); all are dropped when full."""
_TALK = frozenset({"user", "assistant"})


class PromptFacts(NamedTuple):
    hash: str
    """A short, stable fingerprint of what the model was shown."""
    window: int
    """Conversation messages (the user's and the agent's) the prompt holds."""
    summary: bool
    """The prompt holds the running summary of older messages."""


class _Prefix(NamedTuple):
    messages: tuple[Mapping[str, str], ...]
    """The messages hashed after the first (message dicts are never changed once made)."""
    digest: Any
    """The hash of the schema, the first message and these, ready to be copied on."""
    window: int
    summary: bool


_PREFIXES: dict[tuple[str, str, str], _Prefix] = {}


def prompt_facts(messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any]) -> PromptFacts:
    """The fingerprint, window and summary flag of a prompt (see the module docstring)."""
    head = json.dumps(schema, sort_keys=True)
    if not messages:
        return PromptFacts(hashlib.sha256(head.encode()).hexdigest()[:12], 0, False)
    first, rest = messages[0], tuple(messages[1:])
    key = (head, first["role"], first["content"])
    known = _PREFIXES.get(key)
    if known is None or rest[: len(known.messages)] != known.messages:
        known = _Prefix((), hashlib.sha256((head + _part(first)).encode()), *_counted((first,)))
    new = rest[len(known.messages) :]
    kept = _extended(known, new[:-1])
    if len(_PREFIXES) >= PREFIX_CACHE_SIZE:
        _PREFIXES.clear()
    _PREFIXES[key] = kept
    final = _extended(kept, new[-1:])
    return PromptFacts(final.digest.hexdigest()[:12], final.window, final.summary)


def prompt_hash(messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any]) -> str:
    """A short, stable fingerprint of what the model was shown (for `/why` and replays)."""
    return prompt_facts(messages, schema).hash


def _extended(prefix: _Prefix, messages: tuple[Mapping[str, str], ...]) -> _Prefix:
    if not messages:
        return prefix
    digest = prefix.digest.copy()  # the kept state is never updated in place
    # surrogatepass: a transcript stored before replies were made readable may hold one
    digest.update("".join(["\x00" + _part(m) for m in messages]).encode("utf-8", "surrogatepass"))
    window, summary = _counted(messages)
    return _Prefix(
        prefix.messages + messages, digest, prefix.window + window, prefix.summary or summary
    )


def _part(message: Mapping[str, str]) -> str:
    return f"{message['role']}\x01{message['content']}"


def _counted(messages: Sequence[Mapping[str, str]]) -> tuple[int, bool]:
    window = sum(m["role"] in _TALK for m in messages)
    return window, any(m["content"].startswith(SUMMARY_HEADING) for m in messages)
