"""When the offline chooser takes a global exit (an emergency, "cancel", a hand-off).

A global exit is weighed before the state's own exits, and taken only when it clearly
matches: above `GLOBAL_FLOOR`, above staying, and `GLOBAL_LEAD` above the best of the
state's own exits, since a symptom the state asks about ("a little pain in my chest") lies
near the emergency too; and above the message's similarity to the state's own texts, since
"a table for 4" answers a state that asks for the party size, whatever words it shares with
"I don't want a table anymore". A message that says two things ("I got charged twice and honestly
I want to cancel") is weighed clause by clause as well: the urgent thing may be the second,
and the state's own exit would answer only the first. A message that cries for help
("Help, there's smoke coming from the room next door", "it's an emergency") needs less: a
global exit described without examples scores lower than the state's own exits near it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cgraph.backends.llm.negation import clauses
from cgraph.runtime.ports import STAY

GLOBAL_FLOOR = 0.5
"""A global exit is taken offline only when this close."""
GLOBAL_LEAD = 0.08
"""...and only when it beats the best of the state's own exits by this much."""
CLAUSE_GATE = 0.35
"""A message whose global exit scores below this is not weighed clause by clause: a clause
of it scores little more (and embedding its clauses costs a model run)."""
CLAUSE_WORDS = 3
"""A clause shorter than this ("yes", "thanks") is not weighed on its own."""


URGENT_FLOOR = 0.4
"""A message that cries for help ("Help, there's smoke …") takes a global exit from here,
with no lead over the state's own exits."""
_CRIES = re.compile(r"^\W*(?:please )?help\b|\b(?:emergency|ambulance)\b", re.I)


def cries_for_help(message: str) -> bool:
    return _CRIES.search(message) is not None


def urgent_parts(message: str) -> list[str]:
    """What a global exit is weighed on: the message, then each of its clauses when it has
    more than one ("I got charged twice" and "honestly I want to cancel")."""
    parts = [c for c in clauses(message) if len(c.split()) >= CLAUSE_WORDS]
    return [message, *(parts if len(parts) > 1 else [])]


def near(taken: Mapping[str, object], floor: float = GLOBAL_FLOOR) -> bool:
    """Whether the global exit `taken` (an answer with its scores) clears `floor`: only
    then is it weighed against the state's own exits."""
    scores = taken["scores"]
    assert isinstance(scores, dict)
    return taken["exit"] != STAY and float(scores.get(str(taken["exit"]), 0.0)) >= floor


def beats(
    taken: Mapping[str, object],
    own: Mapping[str, float],
    topic: float = 0.0,
    *,
    urgent: bool = False,
) -> bool:
    """Whether the global exit `taken` (an answer with its scores) clears the floor, staying,
    the state's own `topic` and the best of the state's own exits (`own`: their scores, stay
    included) by the lead."""
    scores = taken["scores"]
    assert isinstance(scores, dict)
    exit_id = str(taken["exit"])
    score = float(scores.get(exit_id, 0.0))
    local = [v for k, v in own.items() if k != STAY]
    lead, floor = (0.0, URGENT_FLOOR) if urgent else (GLOBAL_LEAD, GLOBAL_FLOOR)
    rivals = [max(local, default=0.0) + lead, float(scores.get(STAY, 0.0)), topic]
    return exit_id != STAY and score >= floor and score > max(rivals)
