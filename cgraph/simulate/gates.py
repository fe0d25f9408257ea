"""`--fail-under`: thresholds a persona's figures must hold (`success=0.9,pass^3=0.8`).

A threshold names a figure of a persona's summary: `success`, `pass^K` or `pass@K` (any
K up to the persona's runs), or `right` (the share of labelled moves the chooser got
right). Each persona is held to every threshold; one below fails the simulation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cgraph.errors import InputError

DEFAULT = (("success", 1.0),)
"""Without `--fail-under`, every run of every persona must succeed (like a test)."""
_NAME = re.compile(r"^(success|right|pass\^\d+|pass@\d+)$")


@dataclass(frozen=True, slots=True)
class Breach:
    """A persona's figure under its threshold (None: the figure could not be computed)."""

    file: str
    persona: str
    name: str
    value: float | None
    threshold: float

    def __str__(self) -> str:
        shown = "n/a" if self.value is None else f"{self.value:.3f}"
        return f"{self.persona}: {self.name} {shown} < {self.threshold:g}"


def parse(text: str | None) -> tuple[tuple[str, float], ...]:
    """`success=0.9,pass^3=0.8` → (("success", 0.9), ("pass^3", 0.8)); `InputError` names
    what is wrong."""
    if not text:
        return DEFAULT
    found = []
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        if not eq or not _NAME.match(name.strip()):
            raise InputError(
                f"--fail-under: `{part.strip()}` is not NAME=VALUE with NAME one of success, "
                "right, pass^K, pass@K (e.g. success=0.9,pass^3=0.8)"
            )
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"--fail-under: `{value}` is not a number") from None
        if not 0 <= number <= 1:
            raise InputError(f"--fail-under: {name.strip()}={value} is not between 0 and 1")
        found.append((name.strip(), number))
    return tuple(found)


def ks(thresholds: Sequence[tuple[str, float]]) -> set[int]:
    """The k of every pass^k and pass@k threshold (the summary computes those too)."""
    return {int(name[5:]) for name, _ in thresholds if name.startswith(("pass^", "pass@"))}


def breaches(summary: Mapping[str, Any], thresholds: Sequence[tuple[str, float]]) -> list[Breach]:
    """Every persona's figure under its threshold, in persona order."""
    found = []
    for persona in summary["personas"]:
        for name, threshold in thresholds:
            value = figure(persona, name)
            if value is None or value < threshold:
                found.append(Breach(summary["file"], persona["name"], name, value, threshold))
    return found


def figure(persona: Mapping[str, Any], name: str) -> float | None:
    if name == "success":
        return float(persona["success"])
    if name == "right":
        moves = persona["moves"]
        labelled = sum(moves.values())
        return moves["right"] / labelled if labelled else None
    value = persona[name[:5] + "k"].get(name[5:])
    return None if value is None else float(value)
