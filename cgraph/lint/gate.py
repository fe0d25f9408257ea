"""The lint a graph passes before it runs (`cgraph run`, `cgraph test`): one pass of every
check, split into the errors that stop a run and the hints of a run without an LLM."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.lint.offline import OFFLINE_CHECKS, OFFLINE_CODES
from cgraph.lint.walk import CHECKS, lint_paths
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust


@dataclass(frozen=True, slots=True)
class Gate:
    """One graph's lint, as a run sees it."""

    errors: tuple[Diagnostic, ...]
    """What `cgraph run` refuses to start with (warnings never stop a run)."""
    hints: tuple[Diagnostic, ...]
    """The offline checks' findings (`no-say`, `offline-slot`): shown only without an LLM."""


def gate(path: Path, trust: Trust | None = None, limits: ReadLimits | None = None) -> Gate:
    """Lint the graph at `path` (and its sub-graphs) once, with the offline checks too:
    they cost little, and whether the run is offline is decided later. `trust` and
    `limits` are the run's (see `lint_paths`)."""
    checks = (*CHECKS, *OFFLINE_CHECKS)
    found = lint_paths([path], checks=checks, trust=trust, limits=limits).diagnostics
    return Gate(
        errors=tuple(d for d in found if d.severity is Severity.ERROR),
        hints=tuple(d for d in found if d.code in OFFLINE_CODES),
    )


def offline_hints(hints: list[Diagnostic] | tuple[Diagnostic, ...], shown: int = 3) -> str:
    """The hints of an offline run, a few located ones and a count of the rest."""
    lines = [f"hint: {d.file}:{d.line}:{d.column} {d.message}; {d.hint}\n" for d in hints[:shown]]
    if len(hints) > shown:
        lines.append(f"hint: … and {len(hints) - shown} more like these\n")
    return "".join(lines)
