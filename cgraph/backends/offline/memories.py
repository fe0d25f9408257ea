"""What the offline chooser remembers of a message: the user's own statements.

With no model to write summaries, extraction keeps the newest user statement verbatim;
first-person statements about lasting things (`lexicon`: `FIRST_PERSON`, `DURABLE`) are the
user's `personal` memories.
"""

from __future__ import annotations

from collections.abc import Sequence

from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.backends.offline.reading import is_question


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
    personal = lx.FIRST_PERSON_CUE.search(text) and lx.DURABLE_CUE.search(text)
    return [{"tier": "personal" if personal else "task", "text": text}]
