"""Which part of a message carries its point: the clause after a contrast with a denial.

"It's not dirty, it's just that the heating doesn't work", "I don't want to quit, I just
need a break", "no injuries, but I do have high blood pressure": a user who denies one
thing and then says "but", "just", "only" or "rather" has said what they came to say in
what follows; so has one who corrects a choice ("not basic, full please", "it wasn't a
double charge, the amount was wrong"). The embeddings of the whole message weigh the
denied topic as much as the asserted one (and the denied one often names an exit's own
words), so the chooser matches the part after the contrast.
The clauses that only deny ("nothing is broken, …") are set aside as before
(`negation.point`).
"""

from __future__ import annotations

import re

from cgraph.backends.llm.global_exits import urgent_parts
from cgraph.backends.llm.negation import denied_phrases, is_negated, point

_BOUNDARY = re.compile(r"([,.;:!?]|\bbut\b)", re.I)
_CONTRAST = re.compile(
    r"^\W*(?:(?:it['’]?s |it is |i |we |i['’]?m |i am )?(?:just|only|simply|more|rather|actually)|"
    r"instead)\b",
    re.I,
)
# "… and also …", "…, and I'd also like …": a second request joined to the first.
_ALSO = re.compile(
    r"\s*(?:,\s*|\s)(?:and\s+)?(?:(?:i|we|you|can|could|would|i['’]d|we['’]d|i['’]ll)\s+){0,2}"
    r"also\b",
    re.I,
)
FOCUS_WORDS = 3
"""What follows the contrast must be this long to stand for the message."""
_DENIES = re.compile(r"^\W*(?:no|not|nothing|none|never|nope|nah|neither|nor)\b", re.I)
# A short "not X" before a comma corrects a choice: "not basic, full please"; not a
# limit ("not before 4, if possible") nor a plain no ("not right now, thanks").
_CORRECTION = re.compile(
    r"^\W*(?:(?:it|that)['’]?s |it is )?not (?!(?:really|yet|now|right now|today|sure|at all|"
    r"that|as|so|too|much|quite|before|after|later|earlier|until|till|more|less|over|under)\b)",
    re.I,
)
# "it wasn't a double charge, …", "the noise isn't the problem, …": the same correction
# ("the accident wasn't my fault, …" says why, not what instead).
_NOT_THAT = re.compile(
    r"^\W*(?:(?:it|that|this)\s+(?:isn['’]t|wasn['’]t|is not|was not)\s+\w|"
    r"(?:[\w'’]+\s+){1,3}(?:isn['’]t|wasn['’]t|is not|was not)\s+"
    r"(?:the|my|our) (?:problem|issue)\b)",
    re.I,
)
CORRECTION_WORDS = 5
"""A correction names what it is not in at most this many words."""


def contrast_focus(text: str) -> str:
    """The part of `text` from the first contrast that follows a denial ("not X, but Y" →
    "Y") or after a correction ("not X, Y"); `text` itself without one, or when too little
    follows it."""
    pieces = _BOUNDARY.split(text)
    for index in range(2, len(pieces), 2):
        before, separator, rest = "".join(pieces[: index - 1]), pieces[index - 1], pieces[index:]
        after = "".join(rest).strip()
        contrasted = separator.lower() == "but" or _CONTRAST.match(after) is not None
        if contrasted and is_negated(before) and len(after.split()) >= FOCUS_WORDS:
            return after
    return corrected(text)


def corrected(text: str) -> str:
    """What a correction says instead: "not basic, full please" → "full please"; `text`
    itself when it is none. Like what follows "not X, but Y", it is the message's point."""
    before, comma, after = text.partition(",")
    after = after.strip()
    corrects = _CORRECTION.match(before) or _NOT_THAT.match(before)
    if not comma or len(before.split()) > CORRECTION_WORDS or not corrects:
        return text
    if not after or _DENIES.match(after) or _CONTRAST.match(after):
        return text  # "not dangerous, just annoying" is a contrast: too short to stand alone
    return after


def first_request(text: str) -> str:
    """The first of two things asked in one message ("I want to sign up and also book a
    class" → "I want to sign up"): a state's exits take one at a time, the first said
    first. `text` itself when it asks one thing or too little comes before the second."""
    match = _ALSO.search(text)
    if match is None or len(text[: match.start()].split()) < FOCUS_WORDS:
        return text
    return text[: match.start()]


def focus(text: str) -> str:
    """What the chooser matches of `text`: its first request, its point after a contrast or
    a correction, its denials set aside."""
    return point(contrast_focus(first_request(text)))


def derived_texts(message: str, *, clauses: bool) -> list[str]:
    """The texts the chooser embeds for `message`: it, its point and the phrases it denies,
    and the same for each of its clauses when they are weighed for global exits (`clauses`).
    Embedded in one batch up front, they cost one model run instead of one each."""
    parts = urgent_parts(message) if clauses else [message]
    texts = [t for p in parts for t in (p, focus(p), *denied_phrases(contrast_focus(p)))]
    return list(dict.fromkeys(texts))
