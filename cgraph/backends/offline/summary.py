"""The running summary written without a language model: the user's own statements.

A session's summary (`limits.history.strategy: summarize`) is written by the model when it
writes prose; offline, or when the model fails, this one is: the runtime knows it as a
`Summariser` (`runtime/ports.py`). Which statements it keeps is read from the words
(`lexicon`: acknowledgements, self-descriptions, the first person).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.runtime.ports import estimate_tokens

STATEMENT_CHARS = 240
"""A statement longer than this is cut: a summary line, not a transcript."""
PREFIX = "- The user said: "


class ExtractiveSummariser:
    """A `Summariser` that keeps the user's statements, self-descriptions longest."""

    name = "extractive"

    def summarise(self, previous: str, older: Sequence[Mapping[str, str]], budget: int) -> str:
        return extractive(previous, older, budget)


def extractive(previous: str, older: Sequence[Mapping[str, str]], budget: int) -> str:
    """An offline summary: the user's own statements, self-descriptions kept longest.

    Questions and acknowledgements are left out. Over `budget` tokens, the least telling
    statements go first (plain remarks before first-person ones before self-descriptions),
    the oldest first among equals.
    """
    statements = _lines(previous)
    # A summary the model wrote (before it failed) is carried whole.
    carried = previous if previous and not statements else ""
    for message in older:
        text = " ".join(message["content"].split())[:STATEMENT_CHARS]
        if message["role"] == "user" and _states_something(text) and text not in statements:
            statements.append(text)
    ranked = sorted(range(len(statements)), key=lambda i: (_weight(statements[i]), i))
    kept = set(range(len(statements)))
    total = sum(estimate_tokens(s) for s in statements)
    for index in ranked:
        if total <= budget:
            break
        kept.discard(index)
        total -= estimate_tokens(statements[index])
    lines = [f"{PREFIX}{statements[i]}" for i in sorted(kept)]
    return "\n".join([carried, *lines] if carried else lines)


def _lines(summary: str) -> list[str]:
    return [line[len(PREFIX) :] for line in summary.splitlines() if line.startswith(PREFIX)]


def _states_something(text: str) -> bool:
    return bool(text) and not text.rstrip().endswith("?") and not lx.ACKNOWLEDGEMENT.match(text)


def _weight(statement: str) -> int:
    if lx.SELF_DESCRIPTION.search(statement):
        return 2
    return 1 if lx.FIRST_PERSON_CUE.search(statement) else 0
