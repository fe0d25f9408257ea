"""What sentence embeddings do not see: negation and hedging, read from the words.

MiniLM puts "No side effects" next to "I have side effects": the vectors carry the topic,
not whether it is affirmed. So the semantic chooser reads negation itself. A message is cut
into clauses; in each, the words after a negator ("no", "not", "never", "without",
"…n't") are a *denied phrase*: the user says that this does not hold. An exit whose own
wording affirms what the user denies loses score, an exit that denies it too gains
(`cgraph.backends.llm.semantic`). Hedges ("maybe", "not sure", "idk") mark an answer that
does not answer yet.
"""

from __future__ import annotations

import re

from cgraph.backends.llm.limits import without_limits

_CLAUSES = re.compile(r"[,.;:!?()]|\s-\s|\b(?:but|and|though|although|so|because)\b", re.I)
_NEGATOR = re.compile(
    r"\b(?:no|not|never|without|nothing|none|nobody|neither|nor|cannot|"
    # "didn't", and "didnt" as people type it (but not "patient" or "want").
    r"(?:ca|do|does|did|is|are|was|were|have|has|had|would|could|should|wo|must|need|ai)"
    r"n['’]?t)\b",
    re.I,
)
# Words after a negator that carry no topic of their own ("not really", "no more than").
_FILLER = re.compile(
    r"^(?:really|at all|any|anything|more|much|yet|even|just|quite|so|too|a|an|the|that|"
    r"this|it|them|one|ones|like|else|really|sure|think|know|have|had|do|did|be|been|was|"
    r"is|are|got|get|need|needed|i|we|you|he|she|they|my|me)$",
    re.I,
)
_YES = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|i did|i have|i do|correct|right|absolutely|definitely)\b", re.I
)
_NO = re.compile(
    r"^\W*(no+|nope|nah|not really|not at all|not yet|nothing( else| like that)?|none|never)"
    r"\W*(?:$|[,.!;]|\b(?:thanks|thank you)\b)",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:not sure|unsure|maybe|perhaps|idk|i dunno|dunno|(?:don['’]?t know|no idea)(?! where)|"
    r"(?:can['’]?t|don['’]?t|do not|cannot) (?:remember|recall)|not certain|"
    r"hard to (?:say|tell)|let me (?:think|check|look|see|find|ask)|"
    r"i(?:['’]?d| would| will|['’]ll)? (?:need|have) to (?:check|ask|think|look|see|find out)|"
    r"hang on|hold on|"
    r"(?:give me|wait|just) a (?:sec|second|minute|moment|mo)|one (?:sec|second|moment|mo)|"
    r"kind of\?|sort of\?|i guess\?|i think so\?|we['’]?ll see)"
    r"(?:\b|(?<=\?))",
    re.I,
)
# Negations that say yes: "no problem, go ahead", "I don't mind", "why not".
_ASSENT = re.compile(
    r"\b(?:no (?:problem|worries|bother|doubt)|not a problem|(?:i )?don['’]?t mind|"
    r"(?:i )?don['’]?t care|why not|no reason not to)\b",
    re.I,
)
_WORD = re.compile(r"[\w'’]+")
SCOPE_WORDS = 6
"""How far a negation reaches inside its clause."""


def clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


_DENIAL = re.compile(r"^\W*(?:no|not|nothing|none|never|nope|nah|neither)\b", re.I)
POINT_WORDS = 3
"""What is left once the denials are set aside must be this long to stand for the message."""


def point(text: str) -> str:
    """What `text` says once the clauses that only deny are set aside: "not a leak, it's the
    oven, it won't heat up" → "it's the oven, it won't heat up". The text itself when every
    clause denies ("no tightness, no pressure") or too little is left."""
    parts = clauses(without_assent(text))
    # A bare "no" or "neither" is kept: it is the answer, not a denied topic.
    kept = [c for c in parts if not (_DENIAL.match(c) and " " in c)]
    rest = ", ".join(kept)
    return rest if len(kept) < len(parts) and len(rest.split()) >= POINT_WORDS else text


def without_assent(text: str) -> str:
    """`text` with its yes-saying negations ("no problem", "I don't mind") taken out."""
    return " ".join(_ASSENT.sub(" ", text).split())


def assents(text: str) -> bool:
    return _ASSENT.search(text) is not None


def denied_phrases(text: str) -> list[str]:
    """The phrases `text` negates: the topic words after each clause's first negator.

    "No side effects, I feel fine" → ["side effects"]; a bare "No." denies no topic;
    "no problem" is a yes, not a denial.
    """
    found = []
    for clause in clauses(without_assent(without_limits(text))):
        match = _NEGATOR.search(clause)
        if match is None:
            continue
        words = _WORD.findall(clause[match.end() :])[:SCOPE_WORDS]
        topic = [w for w in words if not _FILLER.match(w) and not _NEGATOR.fullmatch(w)]
        if topic:
            found.append(" ".join(words))
    return found


def affirmed(text: str) -> str:
    """`text` without its negators: what it would say if nothing were denied."""
    return " ".join(_NEGATOR.sub(" ", text).split())


def is_negated(text: str) -> bool:
    return _NEGATOR.search(text) is not None


def answer_polarity(text: str) -> int:
    """+1 for a yes-answer, -1 for a bare no-answer ("No.", "Nope", "not really"), else 0."""
    if _YES.search(text):
        return 1
    if _NO.search(text):
        return -1
    return 0


def is_hedge(text: str) -> bool:
    """The user is unsure or not ready to answer ("maybe?", "not sure", "let me check")."""
    return _HEDGE.search(text) is not None
