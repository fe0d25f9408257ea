"""The fitted scorer: a weight per feature, a logit per candidate, a softmax over them.

The weights are fitted by `bench/fit_chooser.py` on the development sets and shipped as
`weights.json` next to this module; nothing is trained at run time, and reading them needs
numpy only. A candidate's logit is its feature row times the weights; the probabilities of
a choice's candidates are the softmax of their logits (a conditional logit), so they add
up to 1 and read as the chooser's confidence in each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

WEIGHTS = "weights.json"


@dataclass(frozen=True, slots=True)
class Scorer:
    """Weights by feature name, in the order of a feature row."""

    names: tuple[str, ...]
    weights: np.ndarray
    calibration: dict[str, float]
    """The ask policy's thresholds chosen by cross-validation when the weights were fitted."""
    about: dict[str, Any]
    """What the weights were fitted on, and their figures (for `/why` and the bench)."""

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        """One probability per row (candidate), adding up to 1."""
        if len(matrix) == 0:
            return np.zeros(0)
        logits = matrix @ self.weights
        odds = np.exp(logits - logits.max())
        return np.asarray(odds / odds.sum())

    def logits(self, matrix: np.ndarray) -> np.ndarray:
        return np.asarray(matrix @ self.weights)


def from_data(data: dict[str, Any], names: tuple[str, ...]) -> Scorer:
    """The scorer `data` describes; a weight of a feature it does not name is 0 (a new
    feature is neutral until the weights are fitted again)."""
    given = dict(zip(data["features"], data["weights"], strict=True))
    weights = np.array([float(given.get(name, 0.0)) for name in names])
    return Scorer(names, weights, dict(data.get("calibration", {})), dict(data.get("about", {})))


@cache
def packaged(names: tuple[str, ...]) -> Scorer:
    """The scorer shipped with the package."""
    text = resources.files(__package__).joinpath(WEIGHTS).read_text(encoding="utf-8")
    return from_data(json.loads(text), names)
