"""Dialogue acts every conversation shares, as extra examples for the exits that mean them.

A user ends, says no, accepts, declines, asks for a person or says they are in crisis in
the same few words whatever the graph: "no, that's everything thanks", "nothing like
that", "no thanks to both", "put me through to someone", "I can't go on like this". Sentence
embeddings match those words well against canonical phrasings of the act ("That's all,
thanks": 0.62) and badly against a narrator's description of it ("The tenant is done or
says goodbye": 0.0). So an exit whose description means one of these acts (its description
is close to the act's) is also matched on the act's utterances. An act about saying no
(there is no problem, the offer is declined) is lent only to an exit whose description is
itself negative: embeddings cannot tell "reports a danger" from "says there is no danger".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cgraph.backends.llm.negation import is_negated

_NEGATIVE = re.compile(r"\b(?:declin|refus|reject|turns? down|gives? up|changes? \w+ mind)", re.I)


@dataclass(frozen=True, slots=True)
class Act:
    """One act: how a designer describes it, how users say it."""

    description: str
    utterances: tuple[str, ...]
    negative: bool = False
    """Lent only to an exit whose description denies or refuses something."""
    floor: float = 0.6
    """How close the exit's description must be to the act's."""


ACTS = (
    Act(
        "The user is done, needs nothing else, or says goodbye.",
        (
            "That's all, thanks.",
            "No, nothing else.",
            "That's everything, bye.",
            "Nothing more, thank you.",
            "Goodbye.",
        ),
    ),
    Act(
        "The user says there is no problem: none of the things asked about happened.",
        (
            "No, nothing like that.",
            "No, none of those.",
            "Nope, everything is fine.",
            "No problems at all.",
        ),
        negative=True,
        floor=0.55,
    ),
    Act(
        "The user declines the offer or refuses what is proposed.",
        ("No thanks.", "Neither, thanks.", "No, I don't want that.", "I'll pass."),
        negative=True,
    ),
    Act(
        "The user asks to talk to a human, a real person or a member of staff.",
        (
            "Can I speak to an actual person?",
            "Put me through to someone, please.",
            "I want to speak to a manager.",
            "Connect me to an agent.",
            "I'd rather talk to a human.",
        ),
        floor=0.65,  # "The customer is done" lies at 0.6
    ),
    Act(
        "The user says they might harm themselves or do not want to live.",
        (
            "I don't want to be here anymore.",
            "I feel like a burden to everyone.",
            "Nobody would miss me if I was gone.",
            "I can't go on like this.",
            "I want to end it all.",
        ),
    ),
    Act(
        "The user decides to keep it unchanged after all.",
        ("Leave it as it is.", "Never mind, keep it.", "Don't change anything."),
        floor=0.6,  # "wants to change the flight after all" lies at 0.57
    ),
)


_ROLE = re.compile(r"^(?:the|a|an)\s+[\w-]+\s+", re.I)


def as_user(description: str) -> str:
    """ "The tenant is done" → "The user is done": the acts are described about "the user"."""
    return _ROLE.sub("The user ", description.strip(), count=1)


def negative_description(description: str) -> bool:
    """The exit is about something not holding or being refused."""
    return is_negated(description) or _NEGATIVE.search(description) is not None
