"""What the offline chooser remembers of a message: the user's own statements.

With no model to write summaries, extraction keeps the newest user statement verbatim;
first-person statements about lasting things are the user's `personal` memories.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cgraph.backends.offline.reading import is_question

# First-person statements with these words describe the user, not today's task.
_DURABLE = re.compile(
    r"\b(my name|i live|i work|allergic|always|usually|every (day|morning|night|week)|"
    r"i prefer|i like|i hate|my (wife|husband|partner|son|daughter|doctor|dog|cat))\b",
    re.I,
)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|mine)\b", re.I)


def extract_memories(user_messages: Sequence[str]) -> list[dict[str, str]]:
    """The newest user message, verbatim, unless it is a question or a bare acknowledgement.

    First-person statements about lasting things (names, habits, family, allergies) are
    `personal`; everything else is `task` context for this session.
    """
    if not user_messages:
        return []
    text = " ".join(user_messages[-1].split())
    if is_question(text) or len(text.split()) < 3:
        return []
    personal = _FIRST_PERSON.search(text) and _DURABLE.search(text)
    return [{"tier": "personal" if personal else "task", "text": text}]
