"""Exits that end the conversation, and messages that sound like a close.

Ending is the one choice a conversation cannot take back, so a weak guess must not end
it: "I took all my pills, no side effects" at "Are you ready to begin?" lies a little
nearer "asks to end the session" (0.16) than anything else, where a careful agent would
ask again. An exit *ends* the conversation when its description says the user leaves
("says goodbye", "is done", "asks to end the session", "wants to stop for now"). Where it
leads does not decide: an exit to END described as an answer ("says the damage was there
before the move") is matched like any other, a weak match on an answer being no guess.
Below `ENDING_FLOOR` such an exit is taken only when the message sounds like a close — it
opens with an acknowledgement, thanks, a no or a farewell, or ends with a farewell
("cheers Maya", "nope, all good", "okay, fair enough"), and asks nothing and adds no
second thing ("great, also the bathroom light is out") — or when every exit of the state
ends the conversation (a closing state's "Take care!").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cgraph.backends.llm.utterances import is_question
from cgraph.runtime.ports import ExitOption

ENDING_FLOOR = 0.3
"""An exit that ends the conversation needs this score unless the message closes."""

# Leaving the conversation, not a thing the user leaves or stops ("stop the direct debit").
_LEAVES = re.compile(
    r"\b(?:good-?bye|says? bye|hangs? up|is done\b|(?:has|needs|says) nothing (?:else|more)|"
    r"(?:wants?|asks?) to (?:stop|end|quit|go)(?: (?:here|now|for (?:now|today)))?\W*$|"
    r"ends? (?:the|this) (?:session|call|chat|conversation|check-?in))",
    re.I,
)
_CLOSING_OPENER = re.compile(
    r"^\W*(?:ok(?:ay)?|k|great|thanks|thank you|thx|cheers|ta|no|nope|nah|nothing|fine|"
    r"perfect|brilliant|lovely|cool|alright|all right|all good|fair enough|good|"
    r"bye|good-?bye|good ?night|see you|that's (?:it|all|everything)|never mind|forget it)\b",
    re.I,
)
_FAREWELL_END = re.compile(
    r"\b(?:bye|good-?bye|good ?night|see you(?: \w+)?|talk (?:later|soon|tomorrow)|take care)"
    r"\W*$",
    re.I,
)
# A second thing after the close is what the message is about.
_MORE = re.compile(r"\b(?:also|another|one more|but)\b", re.I)


def ends_conversation(option: ExitOption) -> bool:
    """The exit's description says the user leaves the conversation."""
    return _LEAVES.search(option.description) is not None


def closes(message: str) -> bool:
    """The message sounds like a close: an acknowledgement, thanks, a no or a farewell,
    asking nothing and adding no second thing."""
    if is_question(message) or _MORE.search(message):
        return False
    return bool(_CLOSING_OPENER.match(message) or _FAREWELL_END.search(message))


def guarded(message: str, options: Sequence[ExitOption]) -> frozenset[str]:
    """The exits that may not end the conversation on a weak score after `message`: those
    that end it, unless the message closes or every exit ends it."""
    ending = frozenset(o.id for o in options if ends_conversation(o))
    if len(ending) == len(options) or closes(message):
        return frozenset()
    return ending
