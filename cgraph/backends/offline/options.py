"""What an exit is, read from its description and examples.

Descriptions are written about the user ("The tenant reports a water leak"); messages by
the user ("water is pouring through the ceiling"). Sentence embeddings place the
narrator's third person far from a first-person message, so an exit is also matched on
*stand-ins*: its description said by the user, whole and per alternative ("declines both
options" → "I decline both options"). An exit whose description means a dialogue act
(done, declined, a person asked for: the lexicon's `acts`, or the graph's own `acts:`) is
matched on the act's examples too. Whether an exit means "no", ends the conversation or expects
questions is read from its words.
"""

from __future__ import annotations

from collections.abc import Sequence

from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.backends.offline.lexicon import Act
from cgraph.backends.offline.reading import (
    affirmed,
    is_negated,
    is_question,
    is_request,
    leading_answer,
)
from cgraph.backends.offline.words import stems
from cgraph.runtime.ports import ExitOption

_WORDS_MIN = 2
"""An alternative shorter than this ("late") is folded into its neighbour."""


def first_person(clause: str) -> str:
    """ "declines both options" → "I decline both options"; "is done" → "I am done"."""
    words = clause.split()
    if not words:
        return clause
    head = words[0].lower()
    if head in lx.IRREGULAR:
        words[0] = lx.IRREGULAR[head]
    elif lx.THIRD_PERSON_VERB.fullmatch(head) and len(head) > 3:
        words[0] = _singular(head)
    else:
        return _pronouns(clause)
    return _pronouns("I " + " ".join(words))


def _pronouns(text: str) -> str:
    said: str = lx.PRONOUN.sub(lambda m: lx.PRONOUNS[m.group(1).lower()], text)
    return said


def _singular(verb: str) -> str:
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes")):
        return verb[:-2]
    return verb[:-1]


def alternatives(description: str) -> list[str]:
    """The description's alternatives, the shared start kept ("a leak or flooding")."""
    body = lx.NARRATOR.sub("", description.strip().rstrip("."), count=1)
    parts = [p.strip(" .") for p in lx.ALTERNATIVES.split(body) if p and p.strip(" .")]
    merged: list[str] = []
    for part in parts:
        if merged and len(part.split()) < _WORDS_MIN:
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    return merged


def stand_ins(description: str) -> tuple[str, ...]:
    """First-person stand-ins for an exit: the whole description said by the user, then
    each of its alternatives."""
    body = lx.NARRATOR.sub("", description.strip().rstrip("."), count=1)
    whole = first_person(body)
    parts = [first_person(p) for p in alternatives(description)]
    return tuple(dict.fromkeys([whole, *(p for p in parts if p != whole)]))


def as_user(description: str) -> str:
    """ "The tenant is done" → "The user is done": the acts are described about "the user"."""
    said: str = lx.ROLE.sub("The user ", description.strip(), count=1)
    return said


def negative_description(description: str) -> bool:
    """The exit is about something not holding or being refused."""
    return is_negated(description) or lx.REFUSES.search(description) is not None


def negative_head(description: str) -> bool:
    """The head of the description, before its first alternative, is negated or refuses."""
    head = lx.HEAD_END.split(description.strip(), maxsplit=1)[0]
    return is_negated(head) or lx.REFUSES.search(head) is not None


def means_no(option: ExitOption) -> bool:
    """The exit means "no": its description's head is negated or refuses, or most of its
    examples open with a no ("No, clean licence." for "has a clean record")."""
    if negative_head(option.description):
        return True
    noes = sum(leading_answer(e) < 0 or bool(lx.LEADING_NO.match(e)) for e in option.examples)
    return noes * 2 > len(option.examples) > 0


def alternative_signs(description: str) -> list[tuple[str, int]]:
    """The description's alternatives, each -1 when negated ("has no allergies or dietary
    requirements" negates both: a verbless alternative inherits the sign before it)."""
    signed: list[tuple[str, int]] = []
    for part in alternatives(description):
        if is_negated(part) or lx.REFUSES.search(part):
            sign = -1
        elif signed and not lx.VERB_OPENER.match(part):
            sign = signed[-1][1]
        else:
            sign = 1
        signed.append((part, sign))
    return signed or [(description, -1 if negative_head(description) else 1)]


def sign_for(phrase: str, description: str) -> int:
    """The sign of the alternative of `description` sharing the most words with `phrase`
    (the head's sign when none shares any): "not dirty" is about "is dirty" (+1)."""
    said = stems(phrase)
    signed = alternative_signs(description)
    shared = [len(said & stems(text)) for text, _ in signed]
    if max(shared, default=0) == 0:
        return -1 if negative_head(description) else 1
    return signed[shared.index(max(shared))][1]


def ends_conversation(option: ExitOption) -> bool:
    """The exit's description says the user leaves the conversation."""
    return lx.LEAVES_CONVERSATION.search(option.description) is not None


def expects_questions(option: ExitOption) -> bool:
    """An exit taken by asking: its description says the user asks about something, or
    an example is a question that is not a request."""
    asked = (e for e in option.examples if is_question(e) and not lx.ASKS_FOR.search(e))
    return bool(lx.ASKS.search(option.description)) or any(True for _ in asked)


def counts_as_answer(message: str, option: ExitOption) -> bool:
    """Whether `message` may take `option` as it stands: a statement, a request, or a
    question the exit expects (a clarifying question answers no exit)."""
    return not is_question(message) or is_request(message) or expects_questions(option)


def lent_acts(acts: Sequence[Act], description: str) -> list[Act]:
    """The `acts` that may lend their examples to an exit so described (by similarity,
    checked by the caller): a negative act only to a negative description."""
    negative = negative_description(description)
    return [act for act in acts if negative or not act.negative]


def affirmed_description(description: str) -> str:
    """The description without its negators: what a denied phrase is compared with."""
    return affirmed(description)
