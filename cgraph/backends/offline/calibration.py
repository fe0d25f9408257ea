"""Every threshold of the offline chooser, in one place.

The scorer's weights are fitted (`scorer`); what is left are the bars of the ask policy
(`policy`) and a few constants of reading. The policy's bars are chosen by cross-validation
on the development sets when the weights are fitted (`bench/fit_chooser.py`) and shipped
with them; `Calibration.fitted()` reads them, and a test or a designer may pass their own.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Calibration:
    """The bars of the ask policy and the reading constants."""

    take_floor: float = 0.5
    """An exit is taken without asking only with at least this confidence."""
    ask_margin: float = 0.15
    """...and only this far ahead of the runner-up; closer, the chooser asks which."""
    irreversible_floor: float = 0.7
    """An exit that cannot be taken back (to END, into a side effect, out of a flow) needs
    this much: more than staying, which the next message can always undo."""
    end_floor: float = 0.0
    """An exit to END needs this much, when it is more than `irreversible_floor`: a session
    wrongly ended is the costliest mistake, a file read by mistake is not."""
    global_floor: float = 0.0
    """A global exit (offered in every state: an emergency, a hand-off) below this is
    neither taken nor asked about: an interruption of the state's business needs plain
    evidence, and the chooser stays."""
    stay_margin: float = 0.1
    """When staying wins by less than this over an exit, the chooser asks about the exit
    instead of staying silently."""
    ask_floor: float = 0.0
    """An exit is asked about only from this confidence: below it nothing is clear enough
    to ask about, and the chooser stays (the state asks its own question again)."""
    candidate_floor: float = 0.15
    """A runner-up is named in a clarifying question only with at least this confidence."""
    answer_floor: float = 0.3
    """An answer to a clarifying question takes the candidate it points to from here."""
    decisive_lead: float = 0.05
    """A silent state's evidence must favour one exit by this much (in probability)."""
    enum_threshold: float = 0.45
    """An enum slot takes the value nearest the message only from this similarity."""
    act_floor: float = 0.6
    """An exit is lent a dialogue act's examples from this nearness of its description to
    the act's, unless the act names its own `floor`."""
    act_floor_shift: float = 0.0
    """Added to every dialogue act's floor: a measurement knob."""
    far: float = 0.45
    """Below this nearness (cosine) to its texts an exit is as far from a message as
    unrelated sentences of the same domain fall in MiniLM: how far below is a feature of
    its own (a reading constant: the weights are fitted with it)."""
    denied_near: float = 0.3
    """A denied phrase is about an exit from this nearness to its (affirmed) description
    (a reading constant, like `far`)."""

    @classmethod
    def fitted(cls, values: dict[str, Any]) -> Calibration:
        """The defaults, with the values chosen when the weights were fitted."""
        known = {f.name for f in fields(cls)}
        return replace(cls(), **{k: float(v) for k, v in values.items() if k in known})
