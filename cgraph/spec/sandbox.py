"""Jinja's immutable sandbox with size limits on everything that can grow a value fast.

A deadline bounds a render's time and the output is counted as it streams
(`cgraph.spec.templating`); what this module stops is growth too fast for either, inside
one C call: `"a" * 10**9`, `10**(10**9)`, `s | replace("", s)`, `"x" | center(10**9)`.
Each such operation is checked *before* it runs, against `MAX_VALUE_CHARS`; every call's
result and every attribute read is checked after, so a value kept in a namespace cannot
double past the limit unseen. The sandbox is the immutable one: a template cannot change
a session's lists or build a list that contains itself.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from cgraph.spec.formats import braces_chars, percent_chars
from cgraph.spec.limits import MAX_BUILT_CHARS, MAX_INT_DIGITS, MAX_VALUE_CHARS, expanded_size

_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.33)
# A width or count argument above this would build a value over the limit by itself.
_MAX_ARGUMENT = MAX_VALUE_CHARS
# Functions and filters whose number arguments are widths or counts: the result is at
# least that long (`batch(n, fill)` pads its last batch to n items, `slice(n)` makes n lists).
_PADDING = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "indent", "batch"})
_PADDING |= {"slice"}
# Items assumed in an iterator joined with a separator (`range(99999) | join(sep)`).
_UNSIZED_GUESS = 1_000


class LimitExceeded(SecurityError):
    """A template tried to build a value over the render limits."""


_SIZED = (str, bytes, list, tuple, dict, set, frozenset)


def _length(value: Any) -> int:
    """A cheap upper bound's first step: characters of text, expanded size of containers."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3 + 1
    if isinstance(value, list | tuple | dict | set | frozenset):
        return expanded_size(value, MAX_VALUE_CHARS)
    return 1


def _check_size(value: Any, what: str | Callable[[], str]) -> Any:
    """`value`, unless it holds over the limit; `what` names it (a callable: built only
    for the message, as this runs on every attribute, item and call)."""
    # Concrete types only: `len()` of a StrictUndefined would raise where `default` is next.
    if isinstance(value, _SIZED) and len(value) > MAX_VALUE_CHARS:
        named = what if isinstance(what, str) else what()
        raise LimitExceeded(f"{named} would hold over {MAX_VALUE_CHARS:,} items or characters")
    return value


class _Budget(threading.local):
    left = MAX_BUILT_CHARS


_BUDGET = _Budget()


def fresh_budget() -> None:
    """Start a render's budget (`MAX_BUILT_CHARS`) in this thread."""
    _BUDGET.left = MAX_BUILT_CHARS


def _built(value: Any, what: str | Callable[[], str]) -> Any:
    """`_check_size`, and what the value holds counted against the render's budget: each
    value may be under the limit while a loop keeps a thousand of them (`range(1000) |
    map('center', 999999) | list`)."""
    if isinstance(value, _SIZED):
        size = len(value)
        if size > MAX_VALUE_CHARS:
            _check_size(value, what)
        _BUDGET.left -= size
        if _BUDGET.left < 0:
            raise LimitExceeded(f"the template built over {MAX_BUILT_CHARS:,} characters in all")
    return value


def _check_arguments(args: Iterable[Any], what: str, widths: bool) -> None:
    """Containers over the limit are refused as arguments; with `widths` (a function that
    pads to a width), so are numbers over it."""
    for value in args:
        wide = widths and isinstance(value, int) and not isinstance(value, bool)
        if wide and abs(value) > _MAX_ARGUMENT:
            raise LimitExceeded(f"{what} was given {value:,}, over the limit of {_MAX_ARGUMENT:,}")
        if isinstance(value, list | tuple | dict) and _length(value) > MAX_VALUE_CHARS:
            raise LimitExceeded(f"{what} was given a value over {MAX_VALUE_CHARS:,} characters")


def _grown(name: str, text: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """The length an amplifying operation would produce, before it runs (0: not one).
    `%` is the `format` filter (`text % arguments`); `format` the method of text."""
    if name == "join":
        return _joined(text, args[0] if args else kwargs.get("d", ""))
    if name == "tojson":
        return _indented_json(text, args[0] if args else kwargs.get("indent"))
    if not isinstance(text, str):
        return 0
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str):
        return len(text) + text.count(args[0]) * len(str(args[1]))
    if name == "indent":
        width = args[0] if args else kwargs.get("width", 4)
        return len(text) + (text.count("\n") + 1) * _pad(width)
    if name == "expandtabs" and args and isinstance(args[0], int):
        return len(text) + text.count("\t") * args[0]
    if name == "wordwrap":
        width, wrap = (args[0] if args else kwargs.get("width", 79)), kwargs.get("wrapstring")
        wrap = args[2] if len(args) > 2 else wrap
        return len(text) + (len(text) // max(int(width), 1) + 1) * len(str(wrap or "\n"))
    return _formatted(name, text, args, kwargs)


def _formatted(name: str, text: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    if name == "%":
        return percent_chars(text, kwargs or args)
    if name == "format":
        return braces_chars(text, args, kwargs)
    if name == "format_map":
        return braces_chars(text, (), args[0] if args and isinstance(args[0], Mapping) else {})
    return 0


def _pad(width: Any) -> int:
    """What one line gains from an indent of `width` (a number of spaces, or a text)."""
    if isinstance(width, str):
        return len(width)
    return width if isinstance(width, int) and not isinstance(width, bool) else 0


def _indented_json(value: Any, indent: Any) -> int:
    """`tojson(indent=…)` puts each item on a line of its own, indented once per level."""
    if not indent:
        return 0
    return _length(value) * (1 + _pad(indent) * _depth(value))


def _depth(value: Any, limit: int = 1_000) -> int:
    """How deeply lists and mappings nest in `value` (at most `limit`)."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest < limit:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            item = list(item.values())
        if isinstance(item, list | tuple):
            deepest = max(deepest, level)
            stack.extend((inner, level + 1) for inner in item)
    return deepest


def _joined(items: Any, separator: Any) -> int:
    # An iterator's length is unknown before it runs: assume a long one.
    count = len(items) if isinstance(items, Sized) else _UNSIZED_GUESS
    return _text_length(items) + count * len(str(separator))


def _text_length(items: Any) -> int:
    """`_length` of what is joined, cheaply for the usual list of strings."""
    if isinstance(items, list | tuple) and all(type(item) is str for item in items):
        return sum(map(len, items))
    return _length(items)


def _check_growth(
    name: str, text: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None
) -> None:
    if _grown(name, text, args, kwargs or {}) > MAX_VALUE_CHARS:
        raise LimitExceeded(f"`{name}` would build over {MAX_VALUE_CHARS:,} characters")


def _check_binop(op: str, left: Any, right: Any) -> None:
    if op == "*":
        for seq, count in ((left, right), (right, left)):
            numeric = isinstance(seq, int | float)
            if isinstance(count, int) and not numeric and _length(seq) * count > MAX_VALUE_CHARS:
                raise LimitExceeded(f"repeating a value {count:,} times is over the limit")
    elif op == "**":
        ints = isinstance(left, int) and isinstance(right, int)
        if ints and right > 0 and max(left.bit_length(), 1) * right > _MAX_INT_BITS:
            raise LimitExceeded(f"the power has more than {MAX_INT_DIGITS:,} digits")
    elif op == "+":
        if not isinstance(left, int | float) and _length(left) + _length(right) > MAX_VALUE_CHARS:
            raise LimitExceeded("joining these values is over the limit")
    elif op == "%" and isinstance(left, str) and percent_chars(left, right) > MAX_VALUE_CHARS:
        raise LimitExceeded(f"`%` would build over {MAX_VALUE_CHARS:,} characters")


_SAFE_CACHE_SIZE = 4096


# Filters and methods that can build a value much larger than their input, by name.
_GROWERS = frozenset({"join", "replace", "indent", "expandtabs", "wordwrap", "format"})
_GROWERS |= {"format_map", "tojson"}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # The piped-in value was bounded when it was made; what a filter can amplify is its
    # other arguments (a width, a separator, a replacement) and the value's growth.
    # Jinja passes a context or an environment first to some filters: skipped by position.
    skip = 0 if getattr(function, "jinja_pass_arg", None) is None else 1
    widths, grows = name in _PADDING, name in _GROWERS
    growth = "%" if name == "format" else name  # the filter is `text % arguments`

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip + 1 or kwargs:
            _check_arguments([*args[skip + 1 :], *kwargs.values()], f"the filter `{name}`", widths)
            if grows and len(args) > skip:
                _check_growth(growth, args[skip], args[skip + 1 :], kwargs)
        return _built(function(*args, **kwargs), lambda: f"the filter `{name}`")

    return bounded


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox with every operator, call and filter held to the value limits."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self._safe: dict[tuple[type, str], bool] = {}

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Jinja's answer depends on the object's type and the name only (`isinstance`
        # tests, the ABC ones slow, for every `loop.last` and `m.text`): asked once a pair.
        key = (type(obj), attr)
        safe = self._safe.get(key)
        if safe is None:
            safe = super().is_safe_attribute(obj, attr, value)
            if len(self._safe) >= _SAFE_CACHE_SIZE:
                self._safe.clear()
            self._safe[key] = safe
        return safe

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        _check_binop(operator_, left, right)
        return _built(super().call_binop(context, operator_, left, right), "the result")

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(__obj, "__name__", "a function")
        if args or kwargs:  # without arguments nothing is amplified
            _check_arguments([*args, *kwargs.values()], f"`{name}`", name in _PADDING)
            if name in _GROWERS:
                _check_growth(name, getattr(__obj, "__self__", None), args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return _built(result, lambda: f"`{name}`")

    def getattr(self, obj: Any, attribute: str) -> Any:
        return _check_size(super().getattr(obj, attribute), lambda: f"`{attribute}`")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # Jinja hands `str.format` out as its own wrapper, which `call` cannot see into:
        # the widths in the format and in its arguments are checked here.
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text, name = value.__self__, value.__name__

        def bounded(*args: Any, **kwargs: Any) -> str:
            _check_growth(name, text, args, kwargs)
            return str(_built(wrapped(*args, **kwargs), f"`{name}`"))

        return bounded

    def getitem(self, obj: Any, argument: Any) -> Any:
        return _check_size(super().getitem(obj, argument), "an item")
