"""Slot values from a message without a language model (the offline chooser).

One extractor per slot type: numbers (digits and number words), booleans (a clear yes or
no, judged by the chooser's fitted scorer: `answers`), enums (the value named, else the
closest by embedding), dates and times (`dateparser`, a maintained parsing library), text
with a `pattern` (its first match), lists and records (`records`: their enum, pattern and
number fields). Anything else stays unset: a wrong value is worse than asking again.

Slots the state asks for (`collect`) are read eagerly; the others only from clear
evidence (a date, a time, an enum value named, a pattern match, the one number of a
message when one number is wanted), so "Table for 4 at 7 pm" fills two steps up front.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from cgraph.backends.offline import records
from cgraph.backends.offline.calibration import Calibration
from cgraph.spec.model import Slot
from cgraph.spec.slots import from_answer_schema, normalised, problem

Closest = Callable[[str, Sequence[str]], tuple[str, float]]
"""The enum value closest to a message, with its similarity (the embedder's)."""
YesNo = Callable[[str, str], "bool | None"]
"""Whether a message (first) clearly says yes (True) or no (False) to a boolean slot (its
description, second); None when it is no clear answer: a question, a hedge, a changed
subject, a yes taken back (the chooser's fitted scorer, `answers`)."""
ENUM_THRESHOLD = Calibration().enum_threshold

_UNIT_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
_UNITS = {w: n for n, w in enumerate(_UNIT_WORDS)}
_TEN_WORDS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_TENS = {w: 10 * (n + 2) for n, w in enumerate(_TEN_WORDS)}
_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD = "|".join([*_UNITS, *_TENS, *_SCALES, "a", "an", "and"])
_WORDS = re.compile(rf"\b(?:{_WORD})(?:[\s-]+(?:{_WORD}))*\b", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
_TIME = re.compile(
    r"\b(?:\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)|\d{1,2}:\d{2}|noon|midnight|"
    rf"(?:{'|'.join(_UNITS)})\s*(?:a\.?m\.?|p\.?m\.?|o'clock))(?!\w)",
    re.IGNORECASE,
)


def extract(
    schemas: Mapping[str, dict[str, Any]],
    collect: Sequence[str],
    message: str,
    *,
    closest: Closest | None = None,
    yes_no: YesNo | None = None,
    now: datetime | None = None,
    enum_threshold: float = ENUM_THRESHOLD,
    missing: Sequence[str] = (),
) -> dict[str, Any]:
    """Slot name → value for every slot the message gives: the valid values, and for the
    slots asked here (`collect`) an invalid value too ("40" where at most 12 may come),
    so that it is refused and asked for again like a model's, not silently dropped.
    Volunteered values are taken only when valid (a stray number is no evidence). A
    boolean is read by `yes_no` only, and only when asked: without it none is filled.
    Numbers, dates and times go to their slots in the order said (`_in_order`), those
    still `missing` first when fewer are said than the state asks for."""
    wanted = {name: from_answer_schema(schema) for name, schema in schemas.items()}
    spans: list[tuple[int, int]] = []
    found: dict[str, Any] = {}
    times = [(m.start(), m.end(), m.group()) for m in _TIME.finditer(message)]
    spans += [(a, b) for a, b, _ in times]
    formatted = {f: [n for n, s in wanted.items() if s.format == f] for f in ("date", "time")}
    said_times = [_time(text) for _, _, text in times] if formatted["time"] else []
    found.update(_in_order(said_times, formatted["time"], collect, missing))
    # Only a graph that asks for a date reads one: else "for 4 tomorrow" would lose its 4
    # to a date nobody wants, and "for 4 on Friday" is an April date to dateparser.
    dates = _dates(message, times, now) if formatted["date"] else []
    found.update(_in_order([d for _, _, d in dates], formatted["date"], collect, missing))
    spans += [(a, b) for a, b, _ in dates]
    rest = _blank(message, spans)
    found.update(_numbers(wanted, collect, rest, missing))
    for name, slot in wanted.items():
        if slot.type in ("array", "object"):
            value = records.read(slot, message)
        elif slot.type == "boolean" and not slot.enum:
            asked = name in collect and yes_no is not None
            value = yes_no(message, slot.description or name) if asked else None  # type: ignore[misc]
        else:
            value = _other(slot, name in collect, message, closest, enum_threshold)
        if value is not None and name not in found:
            found[name] = value
    return {
        k: v
        for k, v in found.items()
        if v is not None and (k in collect or problem(wanted[k], v) is None)
    }


def refusals(schemas: Mapping[str, dict[str, Any]], found: Mapping[str, Any]) -> dict[str, str]:
    """Slot name → what is wrong with its value, in words for the user, for each value in
    `found` its slot's schema refuses ("Party size: 40 is above the maximum 12.")."""
    said = {}
    for name, value in found.items():
        why = problem(from_answer_schema(schemas[name]), value) if name in schemas else None
        if why is not None:
            said[name] = f"{name.replace('_', ' ').capitalize()}: {why.replace('`', '')}."
    return said


def _other(slot: Slot, asked: bool, message: str, closest: Closest | None, threshold: float) -> Any:
    if slot.enum:
        return _enum(slot, asked, message, closest, threshold)
    if slot.type == "string" and slot.pattern and not slot.format:
        match = re.search(slot.pattern.lstrip("^").rstrip("$"), message)
        return match.group() if match else None
    return None


def _enum(slot: Slot, asked: bool, message: str, closest: Closest | None, threshold: float) -> Any:
    lowered = message.casefold()
    for value in slot.enum:
        words = str(value).casefold().replace("_", " ")
        if re.search(rf"\b{re.escape(words)}\b", lowered):
            return value
    if not asked or closest is None:
        return None
    texts = [str(v).replace("_", " ") for v in slot.enum]
    best, score = closest(message, texts)
    return slot.enum[texts.index(best)] if score >= threshold else None


def _numbers(
    wanted: Mapping[str, Slot], collect: Sequence[str], text: str, missing: Sequence[str]
) -> dict[str, Any]:
    """The numbers said, to the numeric slots (`_in_order`)."""
    numeric = [n for n, s in wanted.items() if s.type in ("integer", "number") and not s.enum]
    found = _in_order(_all_numbers(text), numeric, collect, missing)
    return {k: _typed(wanted[k], v) for k, v in found.items()}


def _in_order(
    values: Sequence[Any], names: Sequence[str], collect: Sequence[str], missing: Sequence[str]
) -> dict[str, Any]:
    """Values of one kind in the order said, to the slots of that kind (`names`) this
    state asks for: in the order it asks when as many are said (the user gives, or gives
    again, them all), else those still `missing` first ("and I leave on the 7th" once the
    arrival is known). A single value also fills the one such slot not asked for (a value
    said up front)."""
    asked = [n for n in collect if n in names]
    if len(values) < len(asked):
        asked = [n for n in asked if n in missing] + [n for n in asked if n not in missing]
    found = dict(zip(asked, values, strict=False))
    others = [n for n in names if n not in collect]
    if not asked and len(others) == 1 and len(values) == 1:
        found[others[0]] = values[0]
    return found


def _typed(slot: Slot, value: float) -> Any:
    if slot.type == "integer":
        return int(value) if float(value).is_integer() else None
    return normalised(slot, float(value))


def _all_numbers(text: str) -> list[float]:
    found = [(m.start(), float(m.group().replace(",", ""))) for m in _DIGITS.finditer(text)]
    for match in _WORDS.finditer(text):
        value = _words_value(match.group())
        if value is not None:
            found.append((match.start(), value))
    return [v for _, v in sorted(found)]


def _words_value(text: str) -> float | None:
    total, current, seen = 0, 0, False
    for word in re.split(r"[\s-]+", text.casefold()):
        if word in _UNITS:
            current, seen = current + _UNITS[word], True
        elif word in _TENS:
            current, seen = current + _TENS[word], True
        elif word in _SCALES:
            total, current, seen = total + max(current, 1) * _SCALES[word], 0, True
        elif word in ("a", "an") and not seen:
            current = 0
    return float(total + current) if seen else None


def _time(text: str) -> str | None:
    import dateparser  # heavy: only when a time is said

    parsed = dateparser.parse(text, languages=["en"])
    return parsed.strftime("%H:%M") if parsed else None


def _dates(
    message: str, times: list[tuple[int, int, str]], now: datetime | None
) -> list[tuple[int, int, str]]:
    from dateparser.search import search_dates  # heavy: only for a graph with date slots

    text = _blank(message, [(a, b) for a, b, _ in times])
    settings: dict[str, Any] = {"PREFER_DATES_FROM": "future", "RETURN_AS_TIMEZONE_AWARE": False}
    if now is not None:
        settings["RELATIVE_BASE"] = now
    results = search_dates(text, languages=["en"], settings=settings) or []
    found = []
    for said, when in results:
        if not re.search(r"[A-Za-z]|\d[-/.]\d", said):
            continue  # a bare number is a count, not a date
        start = text.find(said)
        count = _COUNT_BEFORE_DAY.match(said)
        if count:  # "for 4 tomorrow", "4 on Friday": the 4 is a count, the day is the rest
            start, said = start + count.end(), said[count.end() :]
            when = (search_dates(said, languages=["en"], settings=settings) or [(said, when)])[0][1]
        found.append((start, start + len(said), when.date().isoformat()))
    return found


_COUNT_BEFORE_DAY = re.compile(
    r"\d+\s+(?=(on|this|next|to|tomorrow|today|tonight|mon|tue|wed|thu|fri|sat|sun)\w*\b)",
    re.IGNORECASE,
)


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The text with the spans blanked out (positions kept)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)
