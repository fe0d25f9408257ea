"""A failed turn in words: where the conversation went another way, and the path diff."""

from __future__ import annotations

import difflib

from cgraph.spec.names import START
from cgraph.testing.expectations import Mismatch
from cgraph.testing.runner import TurnResult


def divergence(turn: TurnResult) -> str:
    """Which state took which exit (or stayed), against the state or path expected."""
    seen = turn.observed
    wanted = _expected_path(turn.mismatches)
    if wanted is not None:
        for index, (want, got) in enumerate(zip(wanted, seen.path, strict=False)):
            if want != got and index == 0:
                return f"the turn began in `{got}`; the expected path begins with `{want}`"
            if want != got:
                return _at(wanted[index - 1], want, got)
        if len(wanted) > len(seen.path) and seen.path:
            return f"in state `{seen.path[-1]}`: expected exit `{wanted[len(seen.path)]}`, stayed"
    target = next((str(m.expected) for m in turn.mismatches if m.key == "state"), None)
    toward = f"; expected to reach `{target}`" if target else ""
    exits = [(s, e) for s, e in seen.exits if s != START]
    if not exits:
        state = seen.path[-1] if seen.path else seen.state
        return f"in state `{state}`: no exit taken, the turn stayed{toward}"
    taken = ", ".join(f"`{s}` took exit `{e}`" for s, e in exits)
    return f"{taken}{toward}"


def _at(state: str, wanted: str, got: str) -> str:
    return f"in state `{state}`: expected exit `{wanted}`, took `{got}`"


def _expected_path(mismatches: tuple[Mismatch, ...]) -> list[str] | None:
    for m in mismatches:
        if m.key == "path":
            return list(m.expected)
    return None


def path_diff(turn: TurnResult) -> list[str]:
    """A unified diff of the expected and actual path, when `path` was expected."""
    wanted = _expected_path(turn.mismatches)
    if wanted is None:
        return []
    lines = difflib.unified_diff(
        wanted, list(turn.observed.path), "expected", "actual", n=9, lineterm=""
    )
    return list(lines)


def failure_lines(turn: TurnResult, user: str) -> list[str]:
    """Everything a designer needs to see about one failed turn, one line each."""
    lines = [f"turn {turn.number} {user!r}: {divergence(turn)}"]
    for m in turn.mismatches:
        lines.append(f"  {m.key}: {m.message}")
        if m.key not in ("path", "state"):
            lines.append(f"    expected {m.expected!r}, got {m.actual!r}")
    lines += [f"  {line}" for line in path_diff(turn)]
    lines.append(f"  path: {' → '.join(turn.observed.path) or '(none)'}")
    if turn.observed.reply:
        lines.append(f"  reply: {turn.observed.reply!r}")
    lines += [f"  why: {line}" for line in turn.why]
    return lines
