"""Shared words: how much of a message an exit's own texts say in the same words.

Sentence embeddings miss what a word-for-word match sees at once: "my parcel still hasn't
arrived" shares "arrive" with "asks … when it will arrive", "it won't heat up" shares
"heat" with "the heating". The semantic chooser adds this to cosine similarity. Words are
compared by a crude stem (`stem`: "heating", "heated" → "heat"), function words and the
narrator's words ("the customer says") are left out, and a word the message denies ("no
sparks") counts for no exit: denying a word is not saying it. A word found in every exit's
texts tells them apart less than one found in a single exit's (inverse document frequency
over the state's exits).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from cgraph.backends.llm.negation import denied_phrases

_WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?")
_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ed", "ies", "es", "ers", "er", "ly", "s")
_STEM_MIN = 3
# Function words, courtesies, and the words a narrator uses about the user.
_STOP_WORDS = """
a about above after again all also am an and any are as at be been before being
below but by can could did do does doing done don't for from further had has have
having he her here hers him his how i i'd i'll i'm i've if in into is it it's its
itself just let me more most my myself of off on once only or other our out over own
same she should so some such than that that's the their them then there these they
this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yes yeah no not nope never nothing
none okay ok oh well hi hello hey please thanks thank really actually maybe also
still even one get got want wants need needs like say says said tell tells ask asks
user customer client caller tenant owner patient passenger member person someone
something thing things right now today
"""
_STOP = frozenset(_STOP_WORDS.split())


def stem(word: str) -> str:
    """A crude stem, the same for a word's common inflections ("arrives", "arrived")."""
    word = word.lower().replace("’", "'").removesuffix("'s")
    for _ in range(2):
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
                word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
                break
        if len(word) > _STEM_MIN and word.endswith("e"):
            word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    """The content words of `text`, stemmed."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    return {stem(w) for w in words if w not in _STOP and "n't" not in w}


def said(message: str) -> set[str]:
    """The message's content words, those it denies left out ("no sparks": not "spark")."""
    denied = set().union(*(stems(p) for p in denied_phrases(message)))
    return stems(message) - denied


def overlaps(message: str, texts: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Per exit, the share of the message's content words (weighted by how rare they are
    among the exits) that its texts use too: 0 (none) to 1 (all)."""
    words = said(message)
    owned = {key: set().union(*(stems(t) for t in group)) for key, group in texts.items()}
    if not words or not owned:
        return dict.fromkeys(texts, 0.0)
    count = len(owned)
    weight = {w: math.log(1 + count / (0.5 + sum(w in s for s in owned.values()))) for w in words}
    total = sum(weight.values())
    return {key: sum(weight[w] for w in words & s) / total for key, s in owned.items()}
