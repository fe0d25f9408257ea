"""What a message is, read from its words: a yes or a no, a question, a request, a greeting.

The semantic chooser weighs a message by these: a clarifying question counts less as an
answer than a statement, a request phrased as a question ("Can you send it?") does not,
and a greeting before the point ("Hi, my card was stolen") is not part of it.
"""

from __future__ import annotations

import re

from cgraph.backends.llm.limits import without_limits
from cgraph.backends.llm.negation import assents
from cgraph.runtime.ports import ExitOption

_YES = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|i did|i have|i do|correct|right|absolutely|definitely)\b", re.I
)
_NO = re.compile(r"^\W*(no|nope|nah|not|never|none|nothing)\b", re.I)
_NEGATION = re.compile(r"\b(not|no|never|none|nothing|nobody|without)\b|n't\b", re.I)
# A question phrased as a request asks for the exit's action, not for clarification.
_REQUEST = re.compile(
    r"^\W*(?:(?:can|could|would|will) you|(?:can|could|may) (?:i|we|someone|somebody|my|our)"
    r"(?! (?:ask|say)\b)|is there (?:somewhere|anywhere|a way|"
    r"any way)(?: (?:i|we) can)?)\b|\bplease\b",
    re.I,
)
# Examples phrased as a request for the exit's own action ("Can I change my flight?").
_ASKS_FOR = re.compile(r"^\W*(can|could|would|will|may) (you|i|we)\b|\bplease\b", re.I)
# "asks about its booking" expects questions; "asks to check out later" a request.
_ASKS = re.compile(r"\bask(?!s? (?:to|for)\b)", re.I)
_GREETING = re.compile(
    r"^\W*(?:hi+|hello|hey+|hiya|howdy|yo|good (?:morning|afternoon|evening)|morning|evening|"
    r"afternoon)(?: there)?\b[\s,!.:;-]*",
    re.I,
)
_OPENS_QUESTION = re.compile(
    r"^\W*(?!(?:how|what) about\b)(?:what|what's|whats|when|where|why|how|who|which|is|are|"
    r"does|do|did|can|could|will|would|should)\b(?!.*[.!]\s*\S)",
    re.I,
)


def polarity(text: str) -> int:
    """+1 for a yes-answer, -1 for a no-answer or a negated statement, 0 otherwise."""
    if _YES.search(text) or assents(text):
        return 1
    if _NO.search(text) or _NEGATION.search(without_limits(text)):
        return -1
    return 0


def is_question(text: str) -> bool:
    """Ends with a question mark, or opens as a question does ("what's the best …")."""
    return text.rstrip().endswith("?") or bool(_OPENS_QUESTION.match(text))


def expects_questions(option: ExitOption) -> bool:
    """An exit taken by asking: its description says so, or an example is a question that
    is not a request ("Can you send it?" asks for the exit's action, not about it)."""
    asked = (e for e in option.examples if is_question(e) and not _ASKS_FOR.search(e))
    return bool(_ASKS.search(option.description)) or any(True for _ in asked)


def without_greeting(message: str) -> str:
    """ "Hi, my card was stolen" → "my card was stolen": a greeting before what the user
    came to say would pull the message towards the conversational "Hello." prototype."""
    rest = _GREETING.sub("", message, count=1)
    return rest if rest != message and len(rest.split()) >= 2 else message


# What may follow a greeting without saying anything: a name, courtesies, "how are you".
_COURTESY = re.compile(
    r"\b(?:hi+|hello|hey+|hiya|good|morning|afternoon|evening|day|to|you|too|and|how's|how|"
    r"hows|are|r|u|is|it's|it|going|doing|there|all|everyone|nice|great|lovely|meet|see|"
    r"again|thanks|thank|cheers|today|dear|sir|madam|dr|mr|mrs|ms)\b",
    re.I,
)
# A capitalised word inside a sentence is taken for a name ("Hello Ava").
_NAME = re.compile(r"(?<![.!?]\s)(?<![.!?])\b[A-Z][\w']*")


def is_greeting(message: str) -> bool:
    """Only a greeting ("Hello Ava, good morning to you."): it opens with one and nothing
    is left once courtesies and at most two names are set aside. It answers no question."""
    if not _GREETING.match(message):
        return False
    rest = _COURTESY.sub(" ", message)
    words = re.findall(r"[\w']+", rest)
    names = re.findall(r"[\w']+", " ".join(_NAME.findall(rest)))
    return len(words) <= 2 and len(words) == len(names)


def is_request(message: str) -> bool:
    """A question phrased as a request ("Can you…?", "…please?") asks for an exit's action."""
    return _REQUEST.search(message) is not None


def counts_as_answer(message: str, option: ExitOption) -> bool:
    """Whether `message` may take `option` at full score (see the question penalty)."""
    return not is_question(message) or is_request(message) or expects_questions(option)
