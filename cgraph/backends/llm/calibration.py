"""The constants of the offline chooser's exit rule (see `cgraph.backends.llm.semantic`)."""

from __future__ import annotations

from dataclasses import dataclass

from cgraph.backends.llm.denial import DenialWeights
from cgraph.backends.llm.endings import ENDING_FLOOR


@dataclass(frozen=True, slots=True)
class Calibration:
    """The constants of the exit rule, measured on the labelled set."""

    description_weight: float = 0.3
    polarity_penalty: float = 0.1
    question_penalty: float = 0.3
    floor: float = 0.15
    stay_lead: float = 0.2
    decisive_lead: float = 0.05
    """A silent state's evidence must favour one exit by this much to count."""
    denial_weight: float = 0.5
    """How much an exit gains (or loses) when it denies (or affirms) what the user denies."""
    denial_floor: float = 0.2
    """Below this similarity a denied phrase is about something else."""
    acts: bool = True
    """Lend the shared dialogue acts' utterances to the exits that mean them (`acts`)."""
    bare_weight: float = 0.3
    """What opening with a yes or a no adds to the exit that means it (`yesno`)."""
    contrast_weight: float = 1.0
    """How much an exit loses for affirming the denied phrase more than the other exits."""
    overlap_weight: float = 0.2
    """What sharing all of the message's content words with an exit adds (`overlap`)."""
    unsure_below: float = 0.2
    unsure_margin: float = 0.02
    """A weak best exit (below `unsure_below`) this close to the next one is a guess: the
    state asks again ("clear" at "any chest pain?": 0.17 against 0.15)."""
    ending_floor: float = ENDING_FLOOR
    """An exit that ends the conversation is taken below this only on a message that
    closes (`endings`): a weak guess must not end it."""

    @property
    def denial(self) -> DenialWeights:
        """The constants of the denial term, as `denial.denial_scores` takes them."""
        return DenialWeights(self.denial_weight, self.denial_floor, self.contrast_weight)
