"""What a message's negations do to each exit's score in the semantic chooser.

Sentence embeddings barely see negation: "No side effects" sits next to "I have side
effects". So the phrases a message denies (`negation.denied_phrases`) are compared with
each exit's description, its negators taken out: an exit that affirms what the user
denies loses 0.5 · (similarity − 0.2), plus its lead over the other affirming exits; an
exit whose description is itself negated ("No chest pain was reported") gains as much.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cgraph.backends.embed import Embedder, Vector, cosine
from cgraph.backends.llm.negation import affirmed, denied_phrases
from cgraph.backends.llm.yesno import sign_for
from cgraph.runtime.ports import ExitOption


@dataclass(frozen=True, slots=True)
class DenialWeights:
    """The constants of the denial term (see `cgraph.backends.llm.semantic.Calibration`)."""

    weight: float = 0.5
    floor: float = 0.2
    contrast: float = 1.0


def denial_scores(
    embedder: Embedder, message: str, options: Sequence[ExitOption], weights: DenialWeights
) -> dict[str, float]:
    """Per exit, what reading the message's negations adds: + when the exit's closest
    text denies what the user denies ("No chest pain" for "no tightness"), − when it
    affirms it ("I have side effects" for "no side effects"); 0 without negation."""
    phrases = denied_phrases(message)
    if not phrases:
        return {o.id: 0.0 for o in options}
    closest = _closest(embedder, phrases, options)
    result = {}
    for option in options:
        best, signed = closest[option.id]
        others = [v[0] for k, v in closest.items() if k != option.id and v[1] > 0]
        # Denying what this exit affirms, more than what the other exits affirm.
        contrast = best - max(others, default=best) if signed > 0 else 0.0
        strength = max(0.0, best - weights.floor)
        result[option.id] = -signed * weights.weight * strength - weights.contrast * contrast
    return result


def _closest(
    embedder: Embedder, phrases: Sequence[str], options: Sequence[ExitOption]
) -> dict[str, tuple[float, float]]:
    """Per exit, the similarity of its description (negators taken out) to the nearest
    denied phrase, and the sign of that phrase's alternative in the description
    (`yesno.sign_for`): -1 when it is itself negated ("was not cleaned" for "nobody has
    cleaned it"), +1 when it affirms ("is dirty" for "it's not dirty")."""
    plain = {o.id: affirmed(o.description) for o in options}
    keys = list(dict.fromkeys([*phrases, *plain.values()]))
    vectors: dict[str, Vector] = dict(zip(keys, embedder.embed(keys), strict=True))
    closest = {}
    for option in options:
        best, phrase = max((cosine(vectors[p], vectors[plain[option.id]]), p) for p in phrases)
        sign = float(sign_for(phrase, option.description))
        closest[option.id] = (best, sign) if best > 0 else (0.0, 0.0)
    return closest
