"""What a silent state of the offline chooser weighs: the session's findings, then messages.

"No chest pain" said last must not hide the chest pain flagged two turns ago, so the
graph's own record (annotation tags) comes before the recent user messages.
"""

from __future__ import annotations

from cgraph.runtime.ports import Question


def decision_evidence(request: Question) -> list[tuple[str, list[str]]]:
    """What a silent state can weigh, strongest first: the session's findings (annotation
    tags), then the recent user messages."""
    findings = [tag.replace("_", " ") for tag in request.annotations]
    messages = list(request.user_messages)
    if request.kind == "start":
        known = request.has_memories or request.memory_count
        messages.append("returning user" if known else "new user")
    groups = [("the session's findings", findings), ("the user's messages", messages)]
    return [
        (label, list(dict.fromkeys(i for i in items if i.strip())))
        for label, items in groups
        if any(i.strip() for i in items)
    ]
