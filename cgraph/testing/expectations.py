"""Expectations checked against what a turn did: each broken one becomes a `Mismatch`.

Pure functions of (`Expect`, `Observed`), one per key, so a failure names the key, what
was expected and what happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any

from cgraph.spec.testfile import Expect
from cgraph.testing.cases import phrasings
from cgraph.testing.observed import Observed


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One expectation that did not hold."""

    key: str
    expected: Any
    actual: Any
    message: str


def check(expect: Expect, seen: Observed) -> list[Mismatch]:
    """Every expectation of `expect` that `seen` breaks, in the order of the keys."""
    found: list[Mismatch] = []
    for key, rule in _RULES.items():
        wanted = getattr(expect, key)
        if wanted is None or (wanted == _UNSET[key] and not wanted):
            continue  # not expected; an empty list where the default is None is expected
        problem = rule(wanted, seen)
        if problem is not None:
            found.append(Mismatch(key, wanted, *problem))
    return found


Problem = tuple[Any, str] | None
"""(the actual value, what is wrong) or None when the expectation holds."""


def _state(wanted: str, seen: Observed) -> Problem:
    if seen.state == wanted:
        return None
    return seen.state, f"ended in `{seen.state}`, expected `{wanted}`"


def _path(wanted: tuple[str, ...], seen: Observed) -> Problem:
    if seen.path == wanted:
        return None
    return list(seen.path), "the path differs"


def _includes(wanted: tuple[str, ...], seen: Observed) -> Problem:
    missing = [s for s in wanted if s not in seen.path]
    return (list(seen.path), f"the path missed {_names(missing)}") if missing else None


def _excludes(wanted: tuple[str, ...], seen: Observed) -> Problem:
    entered = [s for s in wanted if s in seen.path]
    return (list(seen.path), f"the path went through {_names(entered)}") if entered else None


def _exits(wanted: tuple[str, ...], seen: Observed) -> Problem:
    taken = seen.exits
    ok = len(wanted) == len(taken) and all(map(_same_exit, wanted, taken))
    return None if ok else (seen.exit_names(), "the exits taken differ")


def _same_exit(wanted: str, taken: tuple[str, str]) -> bool:
    state, _, exit_id = wanted.rpartition("->")
    return exit_id.strip() == taken[1] and (not state.strip() or state.strip() == taken[0])


def _contains(wanted: str | tuple[str, ...], seen: Observed) -> Problem:
    reply = seen.reply.casefold()
    missing = [t for t in phrasings(wanted) if t.casefold() not in reply]
    return (seen.reply, f"the reply lacks {_quoted(missing)}") if missing else None


def _matches(wanted: str, seen: Observed) -> Problem:
    if re.search(wanted, seen.reply):
        return None
    return seen.reply, f"the reply does not match /{wanted}/"


def _reply_excludes(wanted: str | tuple[str, ...], seen: Observed) -> Problem:
    reply = seen.reply.casefold()
    present = [t for t in phrasings(wanted) if t.casefold() in reply]
    return (seen.reply, f"the reply contains {_quoted(present)}") if present else None


def _variables(wanted: dict[str, Any], seen: Observed) -> Problem:
    got = seen.variables
    # null is "unset": a variable nothing has set yet holds it, whether or not it is listed.
    wrong = {k: got.get(k) for k, v in wanted.items() if not holds(v, got.get(k))}
    if not wrong:
        return None
    said = ", ".join(f"`{k}` is {v!r}" for k, v in wrong.items())
    return wrong, f"variables differ: {said}"


def holds(wanted: Any, actual: Any) -> bool:
    """Equal, except that a mapping expected needs only the keys it names (recursively,
    also in the items of a list: `[{medication: lisinopril}]` holds for a list of one
    record whatever its other fields)."""
    if isinstance(wanted, dict) and isinstance(actual, dict):
        return all(k in actual and holds(v, actual[k]) for k, v in wanted.items())
    if isinstance(wanted, list | tuple) and isinstance(actual, list | tuple):
        return len(wanted) == len(actual) and all(map(holds, wanted, actual))
    return bool(wanted == actual)


def _annotations(wanted: tuple[str, ...], seen: Observed) -> Problem:
    missing = [t for t in wanted if t not in seen.annotations]
    return (list(seen.annotations), f"no tag {_names(missing)}") if missing else None


def _recalled(wanted: tuple[str, ...], seen: Observed) -> Problem:
    missing = _unmatched(wanted, seen.recalled)
    return (list(seen.recalled), f"no memory recalled with {_quoted(missing)}") if missing else None


def _stored(wanted: tuple[str, ...], seen: Observed) -> Problem:
    missing = _unmatched(wanted, seen.stored)
    return (list(seen.stored), f"no memory stored with {_quoted(missing)}") if missing else None


def _unmatched(wanted: tuple[str, ...], texts: tuple[str, ...]) -> list[str]:
    folded = [t.casefold() for t in texts]
    return [w for w in wanted if not any(w.casefold() in t for t in folded)]


def _flag(name: str, wanted: bool, actual: bool) -> Problem:
    if wanted == actual:
        return None
    return actual, f"{name} is {str(actual).lower()}, expected {str(wanted).lower()}"


def _guard(wanted: bool | str, seen: Observed) -> Problem:
    if wanted is True or wanted is False:
        return _flag("guard", wanted, seen.guard is not None)
    if seen.guard == wanted:
        return None
    return seen.guard, f"guard is {seen.guard or 'none'}, expected {wanted}"


def _interrupted(wanted: tuple[str, ...], seen: Observed) -> Problem:
    if tuple(wanted) == seen.interrupted:
        return None
    now = _names(list(seen.interrupted)) or "none"
    return list(
        seen.interrupted
    ), f"interruptions go back to {now}, expected {_names(list(wanted)) or 'none'}"


def _names(items: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def _quoted(items: list[str]) -> str:
    return ", ".join(repr(i) for i in items)


_RULES: dict[str, Callable[[Any, Observed], Problem]] = {
    "state": _state,
    "path": _path,
    "path_includes": _includes,
    "path_excludes": _excludes,
    "exits": _exits,
    "reply_contains": _contains,
    "reply_matches": _matches,
    "reply_excludes": _reply_excludes,
    "variables": _variables,
    "annotations": _annotations,
    "recalled": _recalled,
    "stored": _stored,
    "completed": lambda wanted, seen: _flag("completed", wanted, seen.completed),
    "fallback": lambda wanted, seen: _flag("fallback", wanted, seen.fallback),
    "guard": _guard,
    "clarified": lambda wanted, seen: _flag("clarified", wanted, seen.clarified),
    "interrupted": _interrupted,
}
"""Expectation key → its check; a drift test keeps these keys equal to `Expect`'s fields."""

_UNSET: dict[str, Any] = {
    f.name: f.default_factory() if f.default_factory is not MISSING else f.default
    for f in fields(Expect)
}
"""Each key's value when a test file does not name it: `interrupted: []` is named (its
default is None) and checked; `path_includes: []` is the default and expects nothing."""
