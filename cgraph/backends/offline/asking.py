"""The clarifying question: the candidates named from their descriptions, as the user
would hear them ("Do you want to change the date, or have the tickets sent again?").

A description is written about the user ("The customer wants to change the date"); the
question speaks to them: the narrator goes, the verb and pronouns turn to the second
person ("wants to change their date" → "want to change your date"). A description that
names a thing rather than the user ("An emergency happening right now, such as …") is
asked about as it is, up to its list of examples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.runtime.ports import ExitOption

_EXAMPLES = re.compile(r"\s*(?:,\s*(?:such as|e\.g\.|for example|like)\b|\(|;|:).*$", re.I)
_COORDINATED = re.compile(r"\b(and|or)\s+(\w+)\b")
_THAT = re.compile(r"^that\s+", re.I)


class Spoken(NamedTuple):
    """A description said to the user: a clause about them ("want to stop", said after
    "you") or a thing they may mean ("chest pain or pressure")."""

    text: str
    about_you: bool


def second_person(description: str) -> Spoken:
    """ "The customer wants to change their date." → "want to change your date"."""
    text = _EXAMPLES.sub("", description.strip().rstrip("."))
    words = text.split()
    if len(words) >= 3 and words[0].lower() in ("the", "a", "an"):
        rest = words[2:]
        while len(rest) > 1 and rest[0].lower().endswith("ly"):  # "explicitly asks"
            rest = rest[1:]
        verb = rest[0].lower()
        if verb in lx.NARRATOR_VERBS:  # "reports chest pain": chest pain is what is meant
            return Spoken(_you(_THAT.sub("", " ".join(rest[1:]))), False)
        if _third_person(verb):
            clause = " ".join(rest)
            wanting = lx.WANTING.match(clause)
            if wanting:
                clause = ("want to" if wanting.group(1) == "to" else "want") + clause[
                    wanting.end() :
                ]
            else:
                clause = " ".join([_to_you(verb), *rest[1:]])
            return Spoken(_you(_COORDINATED.sub(_coordinated, clause)), True)
    return Spoken(_you(text[:1].lower() + text[1:]), False)


def clarifying_question(options: Sequence[ExitOption]) -> str:
    """One question naming every option, likeliest first."""
    # A designer's `label:` is said as written, after "want to" ("send money").
    said = [
        Spoken(f"want to {o.label}", True) if o.label else second_person(o.description)
        for o in options
    ]
    if not said:
        return ""
    if all(s.about_you and s.text.startswith("want ") for s in said):
        wanted = [s.text.removeprefix("want ") for s in said]
        if all(w.startswith("to ") for w in wanted):
            wanted = [w.removeprefix("to ") for w in wanted]
            return f"Do you want to {_joined(wanted)}?"
        return f"Do you want {_joined(wanted)}?"
    if len(said) == 1:
        one = said[0]
        if one.about_you:
            return f"Just to check: you {one.text}, is that right?"
        return f"Just to check: do you mean {one.text}?"
    parts = [f"that you {s.text}" if s.about_you else s.text for s in said]
    return f"Just to check, do you mean {_joined(parts)}?"


def _third_person(verb: str) -> bool:
    return verb in lx.SECOND_PERSON or (
        len(verb) > 3 and lx.THIRD_PERSON_VERB.fullmatch(verb) is not None
    )


def _to_you(verb: str) -> str:
    """ "wants" → "want", "is" → "are", "tries" → "try"."""
    if verb in lx.SECOND_PERSON:
        said: str = lx.SECOND_PERSON[verb]
        return said
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1]


def _coordinated(found: re.Match[str]) -> str:
    """ "is done and says goodbye": a second verb joined to the first turns too (only the
    unmistakable ones: a noun after "and" may end in -s as well)."""
    word = found.group(2)
    known = word.lower() in lx.SECOND_PERSON or word.lower() in lx.NARRATOR_VERBS
    return f"{found.group(1)} {_to_you(word.lower())}" if known else found.group(0)


def _you(text: str) -> str:
    return re.sub(r"\b(" + "|".join(lx.YOU) + r")\b", lambda m: lx.YOU[m.group(1)], text)


def _joined(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", or " + parts[-1]
