"""What a user would say to take an exit that has no `examples:`, read from its description.

Descriptions are written about the user ("The tenant reports a water leak, flooding or a
burst pipe"); messages are written by the user ("water is pouring through the ceiling").
Sentence embeddings place the narrator's third person far from a first-person message, so
each alternative of the description is rewritten as the user would say it: the narrator
("The tenant reports …", "The customer says that …") is dropped, a leading verb in the
third person gets an "I" ("declines both options" → "I decline both options"), and
"their"/"they" become "my"/"I".
"""

from __future__ import annotations

import re

# "The user says that …", "The tenant", "A caller": the narrator, whoever it names.
_NARRATOR = re.compile(
    r"^(?:the|a|an)\s+[\w-]+(?:'s \w+)?"
    r"(?:\s+(?:says|reports|mentions|states|explains|tells \w+|confirms|indicates)(?: that)?)?"
    r"\s+",
    re.I,
)
_ALTERNATIVES = re.compile(r"\s*(?:\bor\b|;|,|\(|\)|\bsuch as\b)\s*", re.I)
# Verbs in the third person that start what the narrator says the user does.
_IRREGULAR = {"is": "am", "has": "have", "does": "do", "was": "was", "says": "say"}
_PRONOUNS = {
    "their": "my",
    "they": "I",
    "them": "me",
    "themselves": "myself",
    "theirs": "mine",
    "his": "my",
    "her": "my",
    "he": "I",
    "she": "I",
}
_PRONOUN = re.compile(r"\b(" + "|".join(_PRONOUNS) + r")\b", re.I)
_WORDS_MIN = 2
"""An alternative shorter than this ("late") is folded into its neighbour."""


def first_person(clause: str) -> str:
    """ "declines both options" → "I decline both options"; "is done" → "I am done"."""
    words = clause.split()
    if not words:
        return clause
    head = words[0].lower()
    if head in _IRREGULAR:
        words[0] = _IRREGULAR[head]
    elif re.fullmatch(r"[a-z]+(?:ies|[^s]s|ches|shes|sses|xes)", head) and len(head) > 3:
        words[0] = _singular(head)
    else:
        return _PRONOUN.sub(lambda m: _PRONOUNS[m.group(1).lower()], clause)
    text = "I " + " ".join(words)
    return _PRONOUN.sub(lambda m: _PRONOUNS[m.group(1).lower()], text)


def _singular(verb: str) -> str:
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1]


def alternatives(description: str) -> list[str]:
    """The description's alternatives, the shared start kept ("a leak or flooding")."""
    body = _NARRATOR.sub("", description.strip().rstrip("."), count=1)
    parts = [p.strip(" .") for p in _ALTERNATIVES.split(body) if p and p.strip(" .")]
    merged: list[str] = []
    for part in parts:
        if merged and len(part.split()) < _WORDS_MIN:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def stand_ins(description: str) -> tuple[str, ...]:
    """First-person stand-in examples for an exit described but not exemplified: the whole
    description said by the user, then each of its alternatives."""
    body = _NARRATOR.sub("", description.strip().rstrip("."), count=1)
    whole = first_person(body)
    parts = [first_person(p) for p in alternatives(description)]
    return tuple(dict.fromkeys([whole, *(p for p in parts if p != whole)]))
