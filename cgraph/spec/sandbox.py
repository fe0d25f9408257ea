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
import re
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from cgraph.spec.limits import MAX_INT_DIGITS, MAX_VALUE_CHARS, expanded_size

_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.33)
# A width or count argument above this would build a value over the limit by itself.
_MAX_ARGUMENT = MAX_VALUE_CHARS
# Format specs (`"{:>999999999}"`, `"%999999999d"`) carry their width in the text.
_WIDE_FORMAT = re.compile(r"\d{7,}")
# A field whose spec holds another field (`"{0:{1}}"`): its width is an argument.
_NESTED_FIELD = re.compile(r"\{[^{}]*\{")
# Functions and filters whose number arguments are widths: the result is at least that long.
_PADDING = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "indent"})
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
    """The length an amplifying operation would produce, before it runs (0: not one)."""
    if name == "join":
        return _joined(text, args[0] if args else kwargs.get("d", ""))
    if not isinstance(text, str):
        return 0
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str):
        return len(text) + text.count(args[0]) * len(str(args[1]))
    if name == "indent" and args and isinstance(args[0], int):
        return len(text) + (text.count("\n") + 1) * args[0]
    if name == "expandtabs" and args and isinstance(args[0], int):
        return len(text) + text.count("\t") * args[0]
    if name == "wordwrap":
        width, wrap = (args[0] if args else kwargs.get("width", 79)), kwargs.get("wrapstring")
        wrap = args[2] if len(args) > 2 else wrap
        return len(text) + (len(text) // max(int(width), 1) + 1) * len(str(wrap or "\n"))
    if name in ("format", "format_map") and _wide_format(text, args, kwargs):
        return MAX_VALUE_CHARS + 1
    return 0


def _wide_format(text: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """A width of a million or more, written in the format or passed to a nested field."""
    if _WIDE_FORMAT.search(text):
        return True
    if not _NESTED_FIELD.search(text):
        return False
    values = [*args, *kwargs.values()]
    values += [v for a in args if isinstance(a, Mapping) for v in a.values()]  # format_map
    return any(isinstance(v, int) and abs(v) > _MAX_ARGUMENT for v in values)


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
    elif op == "%" and isinstance(left, str):
        _check_growth("format", left, ())
        _check_arguments(right if isinstance(right, tuple) else (right,), "`%`", "*" in left)


_SAFE_CACHE_SIZE = 4096


# Filters and methods that can build a value much larger than their input, by name.
_GROWERS = frozenset({"join", "replace", "indent", "expandtabs", "wordwrap", "format"})
_GROWERS |= {"format_map"}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # The piped-in value was bounded when it was made; what a filter can amplify is its
    # other arguments (a width, a separator, a replacement) and the value's growth.
    # Jinja passes a context or an environment first to some filters: skipped by position.
    skip = 0 if getattr(function, "jinja_pass_arg", None) is None else 1
    widths, grows = name in _PADDING, name in _GROWERS

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > skip + 1 or kwargs:
            _check_arguments([*args[skip + 1 :], *kwargs.values()], f"the filter `{name}`", widths)
            if grows and len(args) > skip:
                _check_growth(name, args[skip], args[skip + 1 :], kwargs)
        return _check_size(function(*args, **kwargs), lambda: f"the filter `{name}`")

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
        return _check_size(super().call_binop(context, operator_, left, right), "the result")

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(__obj, "__name__", "a function")
        if args or kwargs:  # without arguments nothing is amplified
            _check_arguments([*args, *kwargs.values()], f"`{name}`", name in _PADDING)
            if name in _GROWERS:
                _check_growth(name, getattr(__obj, "__self__", None), args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return _check_size(result, lambda: f"`{name}`")

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
            return str(_check_size(wrapped(*args, **kwargs), f"`{name}`"))

        return bounded

    def getitem(self, obj: Any, argument: Any) -> Any:
        return _check_size(super().getitem(obj, argument), "an item")
