"""Silent states (decisions, reflections, conditional starts): the evidence is weighed.

"No chest pain" said last must not hide the chest pain flagged two turns ago, so the
session's own record (annotation tags) comes before the recent user messages. Each piece
of evidence is scored like a message at an action state without staying; the exit that
one piece favours most clearly (its lead in confidence over the next exit, at least
`decisive_lead`) is taken; with no decisive evidence, the first exit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from cgraph.backends.offline.reasons import reason
from cgraph.runtime.ports import Choice, Question

Score = Callable[[Question], dict[str, float]]
"""The confidence of each candidate of an action question (the chooser's scorer)."""


def decide_silently(question: Question, score: Score, decisive_lead: float) -> Choice:
    choice = _decision(question, score, decisive_lead)
    if question.kind != "reflection":
        return choice
    said = question.user_messages[-1] if question.user_messages else ""
    note = f"Reviewed: {question.objective}".rstrip()
    if said:
        note += f' The user last said: "{said}"'
    return replace(choice, note=note)


def evidence(question: Question) -> list[tuple[str, list[str]]]:
    """What a silent state can weigh, strongest first: the session's findings (annotation
    tags), then the recent user messages."""
    findings = [tag.replace("_", " ") for tag in question.annotations]
    messages = list(question.user_messages)
    if question.kind == "start":
        known = question.has_memories or question.memory_count
        messages.append("returning user" if known else "new user")
    groups = [("the session's findings", findings), ("the user's messages", messages)]
    return [
        (label, list(dict.fromkeys(i for i in items if i.strip())))
        for label, items in groups
        if any(i.strip() for i in items)
    ]


def _decision(question: Question, score: Score, decisive_lead: float) -> Choice:
    if not question.options:
        return Choice("", reason("no_exits"))
    if len(question.options) == 1:  # no choice made: no confidence to show (as a recall's)
        only = question.options[0].id
        return Choice(only, reason("only_exit", best=only))
    for label, items in evidence(question):
        lead = {o.id: -1.0 for o in question.options}
        deciding: dict[str, dict[str, float]] = {}
        for item in items:
            asked = replace(question, kind="action", allow_stay=False, user_messages=(item,))
            scored = score(asked)
            for key, value in scored.items():
                others = max(v for k, v in scored.items() if k != key)
                if value - others > lead[key]:
                    lead[key], deciding[key] = value - others, scored
        chosen = max(lead, key=lambda k: lead[k])
        if lead[chosen] >= decisive_lead:
            # The confidences shown are those of the piece of evidence that decided (they
            # sum to 1, the chosen one highest); its lead over the next is the reason's.
            shown = {k: round(v, 3) for k, v in deciding[chosen].items()}
            why = reason("evidence", source=label, best=chosen, lead=round(lead[chosen], 3))
            return Choice(chosen, why, confidence=shown)
    first = question.options[0].id
    return Choice(first, reason("no_evidence", best=first))
