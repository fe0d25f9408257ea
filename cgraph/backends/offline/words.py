"""Shared words: how much of a message an exit's own texts say in the same words.

Sentence embeddings miss what a word-for-word match sees at once: "my parcel still hasn't
arrived" shares "arrive" with "asks … when it will arrive". Words are compared by a crude
stem ("heating", "heated" → "heat"), function words and the narrator's words are left out,
a word the message denies ("no sparks") counts for no exit, and a word found in every
exit's texts counts less than one found in a single exit's (inverse document frequency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from difflib import SequenceMatcher

from cgraph.backends.offline.lexicon import LEXICON as lx

_STEM_MIN = 3


def stem(word: str) -> str:
    """A crude stem, the same for a word's common inflections ("arrives", "arrived")."""
    word = word.lower().replace("’", "'").removesuffix("'s")
    for _ in range(2):
        for suffix in lx.SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
                word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
                break
        if len(word) > _STEM_MIN and word.endswith("e"):
            word = word[:-1]
    return word


def stems(text: str) -> set[str]:
    """The content words of `text`, stemmed."""
    words = lx.STEM_WORD.findall(text.lower().replace("’", "'"))
    return {stem(w) for w in words if w not in lx.STOP_WORDS and "n't" not in w}


def said(message: str, denied: Callable[[str], list[str]]) -> set[str]:
    """The message's content words, those it denies (`denied`) left out."""
    gone = set().union(*(stems(p) for p in denied(message)))
    return stems(message) - gone


def overlaps(words: set[str], texts: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Per exit, the share of the message's content `words` (weighted by how rare they are
    among the exits) that its texts use too: 0 (none) to 1 (all)."""
    owned = {key: set().union(*(stems(t) for t in group)) for key, group in texts.items()}
    if not words or not owned:
        return dict.fromkeys(texts, 0.0)
    count = len(owned)
    weight = {w: math.log(1 + count / (0.5 + sum(w in s for s in owned.values()))) for w in words}
    total = sum(weight.values())
    return {key: sum(weight[w] for w in words & s) / total for key, s in owned.items()}


def template(text: str) -> tuple[str, ...]:
    """The words of `text` in order, lower-cased, each name or number a blank ("_"):
    "Read README.md" and "read secrets.env" are both ("read", "_")."""
    words = lx.TOKEN.findall(text.lower().replace("’", "'"))
    return tuple("_" if lx.NAMING.fullmatch(w) else w for w in words)


def verbatim(message: str, examples: Sequence[str]) -> float:
    """How nearly `message` says one of `examples` word for word, names and numbers
    aside: the best share of words in the same order (0 to 1)."""
    said_ = template(message)
    if not said_:
        return 0.0
    ratios = (SequenceMatcher(None, said_, template(e), autojunk=False).ratio() for e in examples)
    return max(ratios, default=0.0)
