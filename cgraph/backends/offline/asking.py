"""The clarifying question: the candidates named from their descriptions, as the user
would hear them ("Do you want to change the date, or have the tickets sent again?").

A description is written about the user ("The customer wants to change the date"); the
question speaks to them: the narrator goes, the verb and pronouns turn to the second
person ("wants to change their date" → "want to change your date").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cgraph.backends.offline import lexicon as lx
from cgraph.backends.offline.options import first_person
from cgraph.runtime.ports import ExitOption

_YOU = {"I": "you", "i": "you", "my": "your", "me": "you", "mine": "yours", "myself": "yourself",
        "am": "are", "I'm": "you're"}  # fmt: skip
_YOU_WORD = re.compile(r"\b(I'm|I|my|me|mine|myself|am)\b")
_WANTS = re.compile(r"^you (?:want|would like|wish|ask|need) to ", re.I)


def second_person(description: str) -> str:
    """ "The customer wants to change their date." → "you want to change your date"."""
    body = lx.NARRATOR.sub("", description.strip().rstrip("."), count=1)
    said = first_person(body)
    if not said.startswith("I "):
        said = f"I mean {said[:1].lower()}{said[1:]}" if said else said
    return _YOU_WORD.sub(lambda m: _YOU.get(m.group(1), m.group(1)), said)


def clarifying_question(options: Sequence[ExitOption]) -> str:
    """One question naming every option, likeliest first."""
    phrases = [second_person(o.description) for o in options]
    if not phrases:
        return ""
    if all(_WANTS.match(p) for p in phrases):
        verbs = [_WANTS.sub("", p) for p in phrases]
        return f"Do you want to {_joined(verbs)}?"
    if len(phrases) == 1:
        return f"Just to check: {phrases[0]}, is that right?"
    return f"Just to check, which is it: {_joined(phrases)}?"


def _joined(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", or " + parts[-1]
