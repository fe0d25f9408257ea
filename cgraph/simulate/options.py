"""What `cgraph simulate` was asked, as plain data (the CLI parses, the library runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cgraph.errors import InputError
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust

EXPLORER = "explore"
"""The one persona of `--explore`: no goal, the least-taken exit first."""


@dataclass(frozen=True, slots=True)
class Options:
    """What `cgraph simulate` was asked, as plain data."""

    runs: int | None = None
    seed: int | None = None
    user: str | None = None
    model: str | None = None
    """The model the graph runs with (`--model`), over the sim file's."""
    user_model: str | None = None
    jobs: int = 1
    explore: bool = False
    replay: bool = False
    budget_calls: int | None = None
    out: Path = Path("sim-results")
    store: Path | None = None
    """`--store DIR`: keep every run's session there, for `cgraph studio --store DIR`."""
    trust: Trust = field(default_factory=Trust)
    """What the simulated graphs may reach besides their folders (it travels to each
    `--jobs` process with the rest of the options)."""
    limits: ReadLimits = field(default_factory=ReadLimits)
    """The limits of what is read: sim files, graphs, sub-graphs, test files."""


def budget_calls(text: str | None) -> int | None:
    """`--budget calls=N` → N; `InputError` for anything else."""
    if text is None:
        return None
    name, _, value = text.partition("=")
    if name.strip() != "calls" or not value.strip().isdigit():
        raise InputError(f"--budget: `{text}` is not calls=N (a whole number of model calls)")
    return int(value)


class CacheMiss(InputError):
    """`--replay` met a request its cache does not hold: the simulation stops (exit 2)."""


class BudgetSpent(InputError):
    """`--budget calls=N` is spent: no run starts after it (the simulation fails)."""
