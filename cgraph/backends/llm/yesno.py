"""Yes and no: which exits of a state mean "no", and whether a message opens with a yes or a no.

Many states ask a yes/no question ("May an engineer come now?", "Any allergies?") and have
one exit for each answer. Sentence embeddings cannot tell "yes, come now" from "I do not
want anyone to come now": both are about coming now. The words can. An exit means "no"
when the head of its description, before its first alternative, is negated or refuses
("The guest does not want anyone to come in now or will be out"), or when most of its
examples open with a no ("has a clean record": "No, clean licence."); "The room is dirty or
was not cleaned" affirms a problem, whatever its second alternative says. A message
answers yes or no by its opening words ("sure, send them up", "no, I'm about to go out",
"not now", "don't think so", "not that I can remember"), "no problem" and "I don't mind"
being yeses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cgraph.backends.llm.negation import assents, clauses, is_negated
from cgraph.backends.llm.overlap import stems
from cgraph.backends.llm.stand_ins import alternatives
from cgraph.runtime.ports import ExitOption

# Where a description's first alternative ends: "…dirty or was not cleaned".
_HEAD_END = re.compile(r"\s(?:or|and)\s|[,;:(]", re.I)
_REFUSES = re.compile(
    r"\b(?:declin|refus|reject|turns? down|gives? up|prefers? (?:to )?(?:stay|keep)|"
    r"would rather not)",
    re.I,
)
# An alternative that opens with a verb says something of its own ("or will be out").
_VERB = re.compile(
    r"^(?:is|was|are|were|has|have|had|will|would|can|could|does|do|did|may|might|should|"
    r"must|gets?|got|says?|wants?|needs?|asks?|[a-z]+ed)\b",
    re.I,
)
_LEADING_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|yea|sure|ok(?:ay)?|of course|certainly|absolutely|definitely|"
    r"go ahead|go on|please do|fine|alright|all right|sounds good|why not)\b",
    re.I,
)
_LEADING_NO = re.compile(
    r"^\W*(?:no|nope|nah|nothing|none|never|no thanks|(?:i )?don['’]?t think so|"
    r"i can['’]?t think of any(?:thing)?|"
    r"not (?:now|really|today|yet|needed|at all|that i know(?: of)?|as far as i know|"
    r"that i (?:can )?(?:remember|recall|think of)))\b",
    re.I,
)

_CORRECTION = re.compile(r"\b(?:actually|wait|i mean),? (yes|yeah|no)\b", re.I)
_BARE = re.compile(r"\W*(?:thanks|thank you|sorry|no|not really)?\W*", re.I)


def negative_head(description: str) -> bool:
    """The exit means "no": the head of its description is negated or refuses."""
    head = _HEAD_END.split(description.strip(), maxsplit=1)[0]
    return is_negated(head) or _REFUSES.search(head) is not None


def alternative_signs(description: str) -> list[tuple[str, int]]:
    """The description's alternatives, each with -1 when it is negated: "has no allergies
    or dietary requirements" negates both (a verbless alternative inherits the negation
    before it); "is dirty or was not cleaned" affirms the first and negates the second."""
    signed: list[tuple[str, int]] = []
    for part in alternatives(description):
        if is_negated(part) or _REFUSES.search(part):
            sign = -1
        elif signed and not _VERB.match(part):
            sign = signed[-1][1]
        else:
            sign = 1
        signed.append((part, sign))
    return signed or [(description, -1 if negative_head(description) else 1)]


def sign_for(phrase: str, description: str) -> int:
    """The sign of the alternative of `description` that shares the most words with
    `phrase` (the head's sign when none shares any): "not dirty" is about "is dirty" (+1),
    "nobody has cleaned it" about "was not cleaned" (-1). Words, not embeddings: cheap,
    and a denied phrase names the alternative it denies."""
    said = stems(phrase)
    signed = alternative_signs(description)
    shared = [len(said & stems(text)) for text, _ in signed]
    if max(shared, default=0) == 0:
        return -1 if negative_head(description) else 1
    return signed[shared.index(max(shared))][1]


def leading_answer(message: str) -> int:
    """+1 when the message opens with a yes ("sure, send them up", "no problem, I'm in"),
    -1 when it opens with a no ("no, I'm about to go out", "not now"), else 0."""
    corrected = _CORRECTION.search(message)  # "no, well actually yes, once": the last word
    if corrected:
        return 1 if corrected.group(1).lower().startswith("y") else -1
    parts = clauses(message)
    if _LEADING_YES.match(message) or (parts and assents(parts[0])):
        return 1
    # "nothing's wrong with him, he just needs his booster" denies a topic, then says
    # something else: that is no answer to the question.
    first = _LEADING_NO.match(message)
    bare = first is not None and (len(parts) == 1 or _BARE.fullmatch(parts[0][first.end() :]))
    return -1 if bare else 0


def means_no(option: ExitOption) -> bool:
    """The exit means "no": its description's head is negated or refuses, or most of its
    examples open with a no ("No, clean licence.", "Nothing at all." for "has a clean
    record": the description names the answer's content, the examples its polarity)."""
    if negative_head(option.description):
        return True
    noes = sum(leading_answer(e) < 0 or bool(_LEADING_NO.match(e)) for e in option.examples)
    return noes * 2 > len(option.examples) > 0


def answer_scores(message: str, options: Sequence[ExitOption], weight: float) -> dict[str, float]:
    """Per exit, `weight` when the message opens with the answer the exit means: a no for
    an exit that means "no", a yes for the others. Nothing unless the state offers both."""
    negative = {o.id: means_no(o) for o in options}
    lead = leading_answer(message)
    if not lead or len(set(negative.values())) < 2:
        return dict.fromkeys(negative, 0.0)
    return {key: weight if (lead < 0) == no else 0.0 for key, no in negative.items()}
