"""Negations of another word: a limit stated, not an answer denied.

"I can't have gluten" at "Any allergies?", "I don't eat pork", "I can't exercise after my
surgery", "I can't sleep for the traffic": the "n't" does not deny what the state asks
about; it states a condition the user has, which is what the exit that records one means.
Read as a denial, such a message pulls towards the exit that says there is none ("has no
allergies"). So a negator before a verb of ability or diet is read as part of an affirmed
statement: neither a denied phrase nor a no-answer's polarity. Not "don't have" ("I don't
have any allergies" denies), not going somewhere ("I can't get to a drop-off point" denies
that option) and not a fault ("the dishwasher won't drain": exits describe faults as "not
working" too, so the negation matches them).
"""

from __future__ import annotations

import re

_VERBS = (
    r"eat|drink|have|sleep|drive|walk|exercise|train|run|afford|manage|climb|lift|"
    r"bend|stand|hear|see"
)
# "don't have" is left alone: "I don't have any allergies" denies.
_LIMIT = re.compile(
    rf"\b(?:can['’]?t|cannot|can not|couldn['’]?t|won['’]?t)\s+(?:really\s+|even\s+)?"
    rf"(?P<can>{_VERBS})\b|"
    r"\b(?:don['’]?t|doesn['’]?t|do not|does not)\s+(?P<does>eat|drink|drive)\b",
    re.I,
)


def states_limit(text: str) -> bool:
    """The text states a limit or a fault with a negator ("I can't have gluten")."""
    return _LIMIT.search(text) is not None


def without_limits(text: str) -> str:
    """`text` with the negators of its limits taken out, for reading what it denies:
    "I can't have gluten" → "I have gluten"."""
    return _LIMIT.sub(lambda m: m.group("can") or m.group("does"), text)
