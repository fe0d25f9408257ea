"""The size limits of the format, defined once: lint reports them, the loader refuses
them, and the runtime applies the same ones to values a template computes.

Sizes are measured as the length of a value's JSON text, roughly: what a session would
store. An alias shares one node many times, so sizes are counted *expanded* (a YAML
"billion laughs" is a few lines of text and gigabytes of JSON).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_VALUE_CHARS = 1_000_000
"""Largest value (a variable, a `set:` result, a tool argument), in JSON characters."""
MAX_DEPTH = 100
"""Deepest nesting of lists and mappings in a graph file or a stored value."""
MAX_SCAN_DEPTH = 1_000
"""Brackets or indentation columns deep at which a file is refused before YAML parsing
(PyYAML's C parser recurses without a limit and crashes the process near 30,000)."""
MAX_BUILT_CHARS = 20 * MAX_VALUE_CHARS
"""Most characters (and items) one render may build in all, every value an operator, call
or filter returns counted even once it is dropped: a loop may not keep a thousand values
each under `MAX_VALUE_CHARS`."""
RENDER_SECONDS = 1.0
"""Longest one render of a graph template may take."""
MAX_INT_DIGITS = 4_300
"""Python's own limit on converting integers to and from text."""
MAX_FILE_BYTES = 20_000_000
"""Largest file read as a graph, a sub-graph, a test file or a handler's source (20 MB),
unless a `ReadLimits` says otherwise (`--max-file-size`, `CGRAPH_MAX_FILE_SIZE`)."""
FILE_SIZE_VARIABLE = "CGRAPH_MAX_FILE_SIZE"
"""The environment's `--max-file-size`; read by the command line only."""
MAX_MESSAGE_CHARS = 8_000
"""Longest user message a session takes (`Session.send`, `cgraph run`, the HTTP server)."""
MAX_GRAPH_NAME_CHARS = 200
"""Longest graph `name:` (what a client sends to `cgraph serve` to start a session)."""


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


def text_problem(
    text: object, limit: int = MAX_MESSAGE_CHARS, what: str = "a message"
) -> str | None:
    """Why `text` cannot be stored as a message, as words to follow "the message", or None.

    Storable text is a `str` of at most `limit` characters that encodes as UTF-8 (no lone
    surrogate: what a JSON `"\\ud800"` or, read with `surrogateescape`, a byte that is
    not UTF-8 becomes) and holds no NUL.
    """
    if not isinstance(text, str):
        return f"is {type(text).__name__}, not text"
    if len(text) > limit:
        return f"is {len(text):,} characters, over the {limit:,} {what} may hold"
    unencodable = not_utf8(text)
    if unencodable is not None:
        return f"holds {unencodable}"
    nul = text.find("\x00")
    return None if nul < 0 else f"holds a NUL character at character {nul + 1}"


def not_utf8(text: str) -> str | None:
    """The first character of `text` that UTF-8 cannot encode, in words, or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"{_surrogate(text[err.start])} at character {err.start + 1}"
    return None


def readable(value: Any) -> Any:
    """`value` (JSON data a model wrote) with every lone surrogate in its text, keys too,
    replaced by U+FFFD, as a UTF-8 decoder shows a broken character: a JSON `"\\ud800"`
    decodes to one, and text holding it can be neither stored, hashed nor printed."""
    if isinstance(value, str):
        return value if not_utf8(value) is None else _replaced(value)
    if isinstance(value, list):
        return [readable(item) for item in value]
    if isinstance(value, dict):
        return {readable(k): readable(v) for k, v in value.items()}
    return value


def _replaced(text: str) -> str:
    # Through UTF-16, where a high and a low surrogate that stand together are one character
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _surrogate(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # `surrogateescape`'s stand-in for an undecodable byte
        return f"a byte that is not UTF-8 (0x{code - 0xDC00:02x})"
    return f"a lone surrogate (U+{code:04X})"


def check_message(message: object, key: object = None) -> None:
    """`InputError` when a message, or the client's key sent with it, cannot be stored
    (see `text_problem`)."""
    for what, text in (("message", message), ("id", key)):
        problem = None if text is None and what == "id" else text_problem(text)
        if problem is not None:
            from cgraph.errors import InputError  # the error path only

            raise InputError(f"the {what} {problem}; nothing of it was kept")


_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.32)
_JSON_KEYS = (str, int, float, bool, type(None))


def unstorable(value: Any) -> str | None:
    """Why `value` cannot be stored as JSON data, with where inside it; None when it can.

    Storable: text UTF-8 can encode, finite numbers of at most `MAX_INT_DIGITS` digits,
    booleans, None, and lists, tuples and dicts of them whose keys are text or numbers.
    Everything else (a set, a generator, an object, NaN, a tuple as a key) is not: the JSON
    encoder would raise, or silently store a text that is no longer the value.
    """
    stack: list[tuple[Any, tuple[object, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        problem = _scalar_problem(item)
        if problem is None and isinstance(item, dict):
            problem = next((_key_problem(k) for k in item if _key_problem(k)), None)
            stack.extend((v, (*path, k)) for k, v in item.items())
        elif problem is None and isinstance(item, list | tuple):
            stack.extend((v, (*path, n)) for n, v in enumerate(item))
        if problem is not None:
            inside = " (at " + ".".join(map(str, path)) + ")" if path else ""
            return problem + inside
    return None


def _scalar_problem(item: Any) -> str | None:
    if isinstance(item, str):
        return not_utf8(item)
    if isinstance(item, bool) or item is None:
        return None
    if isinstance(item, int):
        too_long = item.bit_length() > _MAX_INT_BITS
        return f"a number of more than {MAX_INT_DIGITS:,} digits" if too_long else None
    if isinstance(item, float):
        return None if math.isfinite(item) else f"the number {item}"
    if isinstance(item, dict | list | tuple):
        return None
    return f"a {type(item).__name__}, not JSON data"


def _key_problem(key: Any) -> str | None:
    if not isinstance(key, _JSON_KEYS):
        return f"a key that is a {type(key).__name__}"
    return _scalar_problem(key) if isinstance(key, str | float) else None


_SIZE = re.compile(r"\s*(\d+)\s*([kmg]?)b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


def parse_size(text: str) -> int:
    """A size in bytes from `20000000`, `500k`, `20M` or `1G` (powers of 1,000);
    `ValueError` for anything else."""
    found = _SIZE.fullmatch(text)
    if found is None or int(found[1]) == 0:
        raise ValueError(f"{text!r} is not a size: write bytes, or a number with k, M or G")
    return int(found[1]) * _UNITS[found[2].lower()]


@dataclass(frozen=True)
class ReadLimits:
    """The limits the person running cgraph may set on what is read: `ReadLimits()` holds
    the shipped ones. (A graph's own `limits:` section is `cgraph.spec.model.Limits`.)"""

    file_size: int = MAX_FILE_BYTES
    """Largest file read as a graph, a sub-graph, a test file or a handler's source, in
    bytes (`--max-file-size`)."""

    def as_data(self) -> dict[str, int]:
        """As JSON data, for a process this one starts (`read_limits_of` reads it back)."""
        return {"file_size": self.file_size}


def read_limits_of(data: Mapping[str, Any]) -> ReadLimits:
    """The limits `ReadLimits.as_data` wrote."""
    return ReadLimits(int(data.get("file_size", MAX_FILE_BYTES)))
