"""How long a `%` or `str.format` result can be, read from the format and its arguments
before anything is built.

A format multiplies: each field pads to its width (`%999999d`, `{:999999}`), a `*` or a
nested field takes the width from an argument (`'%*d' % (10**9, 1)`,
`'{0:{1}}'.format(1, 10**9)`), and a field may repeat one large argument any number of
times (`('{0}' * 1000).format(s)`). Each bound here is an upper bound of the result's
length: the sum, over the fields, of the widths and precisions the field can ask for and
of the longest text its value can have, plus the format's own text. A malformed format
is bounded by its length: Python refuses it before building anything.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from cgraph.spec.limits import MAX_VALUE_CHARS, expanded_size

_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*"  # a mapping key, flags
    r"(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?(?P<kind>.)",
    re.DOTALL,
)
_NUMBER = re.compile(r"\d+")
_FLOAT_CHARS = 330
"""The longest `%f` of a float (1e308 has 309 digits), before its precision."""
_HUGE = MAX_VALUE_CHARS + 1
"""Any bound over the limit: a number written with more digits than a width can have."""


def value_chars(value: Any) -> int:
    """The longest text one field can make of `value` without a width."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, float):
        return _FLOAT_CHARS
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return value.bit_length() // 3 + 2
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return expanded_size(value, MAX_VALUE_CHARS) * 2  # a repr quotes and escapes
    return 200  # an object's repr: its type's name and an address


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 7 else _HUGE


def _width(argument: Any) -> int:
    if isinstance(argument, int) and not isinstance(argument, bool):
        return min(abs(argument), _HUGE)
    return 0  # not a number: Python refuses it


def percent_chars(text: str, arguments: Any) -> int:
    """An upper bound of the length of `text % arguments`."""
    mapping = arguments if isinstance(arguments, Mapping) else None
    values = list(arguments) if isinstance(arguments, tuple) else [arguments]
    total, position = len(text), 0
    for field in _PERCENT.finditer(text):
        if field["kind"] == "%":
            continue
        for part in (field["width"], field["precision"]):
            if part == "*":
                total += _width(values[position]) if position < len(values) else 0
                position += 1
            elif part:
                total += _number(part)
        if mapping is not None and field["key"] is not None:
            value = mapping.get(field["key"])
        else:
            value = values[position] if position < len(values) else None
            position += 1
        total += value_chars(value)
        if total > MAX_VALUE_CHARS:
            break
    return total


def braces_chars(text: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """An upper bound of the length of `text.format(*args, **kwargs)` (or `format_map`,
    its mapping as `kwargs`)."""
    values = [*args, *kwargs.values()]
    longest = max(map(value_chars, values), default=0)
    widest = max(map(_width, values), default=0)
    total = len(text)
    try:
        fields = [
            spec or "" for _, name, spec, _ in string.Formatter().parse(text) if name is not None
        ]
    except ValueError:
        return total
    for spec in fields:
        total += longest + spec.count("{") * widest  # a nested field's width is an argument
        total += sum(_number(digits) for digits in _NUMBER.findall(spec))
        if total > MAX_VALUE_CHARS:
            break
    return total
