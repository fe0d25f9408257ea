"""A boolean slot's value read as a choice: yes, no, or no clear answer.

Reading "yes" anywhere in a message fills a boolean from "how much do I have?" ("I have")
or "yes but first, what's my balance?", and a filled boolean is acted on at once (its
`when:` exits lead into the transfer). So a boolean is read by the fitted scorer instead:
the message against two answers (the slot's description said yes and said no, with the
shared utterances of each) and staying, each answer marked as a step that cannot be taken
back. The value is filled only when the ask policy would take that answer without asking;
a question, a hedge, a changed subject or a yes taken back fills nothing, and the state
asks again. A question ("sure?") and a hedge are never an answer, whatever the scorer says:
a yes said back as a question is asked again, not acted on.
"""

from __future__ import annotations

from cgraph.backends.offline import reading as rd
from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.runtime.ports import ExitOption

YES = "yes"
NO = "no"
VALUES = {YES: True, NO: False}
"""The value of each answer."""


def options(description: str) -> tuple[ExitOption, ExitOption]:
    """The two answers to a boolean slot so described, as exits of a choice."""
    about = description.strip()
    return (
        ExitOption(YES, f"The user answers yes. {about}", YES, lx.SAYS_YES, irreversible=True),
        ExitOption(NO, f"The user answers no. {about}", NO, lx.SAYS_NO, irreversible=True),
    )


def may_answer(message: str) -> bool:
    """The message may answer a yes-or-no question: it is no question back ("sure?", "how
    much is left?"; a request such as "can you send it?" may answer) and no hedge."""
    asks_back = rd.is_question(message) and not rd.is_request(message)
    return not asks_back and not rd.is_hedge(message)
