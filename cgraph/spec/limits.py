"""The size limits of the format, defined once: lint reports them, the loader refuses
them, and the runtime applies the same ones to values a template computes.

Sizes are measured as the length of a value's JSON text, roughly: what a session would
store. An alias shares one node many times, so sizes are counted *expanded* (a YAML
"billion laughs" is a few lines of text and gigabytes of JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_VALUE_CHARS = 1_000_000
"""Largest value (a variable, a `set:` result, a tool argument), in JSON characters."""
MAX_MESSAGE_CHARS = 8_000
"""Longest user message, in characters: what a front end (`cgraph serve`) refuses before
a turn starts."""
MAX_DEPTH = 100
"""Deepest nesting of lists and mappings in a graph file or a stored value."""
MAX_SCAN_DEPTH = 1_000
"""Brackets or indentation columns deep at which a file is refused before YAML parsing
(PyYAML's C parser recurses without a limit and crashes the process near 30,000)."""
RENDER_SECONDS = 1.0
"""Longest one render of a graph template may take."""
MAX_INT_DIGITS = 4_300
"""Python's own limit on converting integers to and from text."""


def expanded_size(value: Any, limit: int = MAX_VALUE_CHARS) -> int:
    """About the length of `value` as JSON, counting shared parts each time they appear.

    Stops counting past `limit` (returns a number above it), so a huge or circular value
    costs no more than a small one. Linear in the distinct objects of `value`.
    """
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if (kind is list or kind is tuple) and all(type(item) is str for item in value):
        return sum(map(len, value)) + 3 * len(value) + 2  # the usual case, without a walk
    return _Sizer(limit).size(value)


class _Sizer:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.memo: dict[int, int] = {}
        self.active: set[int] = set()

    def size(self, value: Any) -> int:
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, bool) or value is None:
            return 5
        if isinstance(value, int):
            return value.bit_length() // 3 + 1  # about its decimal digits
        if not isinstance(value, Mapping | list | tuple | set | frozenset):
            return 24  # a float or an opaque object, as text
        key = id(value)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:  # circular: it has no JSON text at all
            return self.limit + 1
        self.active.add(key)
        try:
            total = self._container(value)
        finally:
            self.active.discard(key)
        self.memo[key] = total
        return total

    def _container(self, value: Any) -> int:
        total = 2
        items = value.items() if isinstance(value, Mapping) else ((None, v) for v in value)
        for item_key, item in items:
            total += self.size(item) + 1 + (self.size(item_key) + 1 if item_key else 0)
            if total > self.limit:
                return self.limit + 1
        return total


def too_large(value: Any, limit: int = MAX_VALUE_CHARS) -> bool:
    """Whether `value` is over `limit` JSON characters (or circular)."""
    return expanded_size(value, limit) > limit


def largest_part(value: Any, limit: int = MAX_VALUE_CHARS) -> tuple[Any, ...]:
    """The path to the innermost part of `value` that is still over `limit`."""
    path: list[Any] = []
    seen: set[int] = set()
    while id(value) not in seen:  # a circular value: stop where it comes back round
        seen.add(id(value))
        items = (
            value.items()
            if isinstance(value, Mapping)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        )
        inner = next(((k, v) for k, v in items if too_large(v, limit)), None)
        if inner is None:
            break
        path.append(inner[0])
        value = inner[1]
    return tuple(path)


def check_size(value: Any, what: str, limit: int = MAX_VALUE_CHARS) -> None:
    """`ValueTooLarge` when `value` is over `limit` JSON characters or circular, naming
    `what` ("variable `notes`", "the result of tool `search`") and the part too large.

    For the runtime to call on every value it is about to store: cheap on small values,
    bounded on huge or shared ones.
    """
    if not too_large(value, limit):
        return
    from cgraph.errors import ValueTooLarge  # the error path only

    path = largest_part(value, limit)
    inside = " at " + ".".join(str(step) for step in path) if path else ""
    raise ValueTooLarge(f"{what} is over {limit:,} characters{inside}", path)
