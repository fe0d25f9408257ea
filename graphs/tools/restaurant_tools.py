"""Tools for the example `restaurant_reservation.yaml`: a small, deterministic booking book.

In-memory and pure, so the example runs offline and every outcome can be tested: 20:00
is always full, every other time from 17:00 to 22:00 is free, on any day. A day is
"today" or an ISO date (`2026-11-24`), as the graph's `date` slot holds it.
"""

from __future__ import annotations

from typing import Any

OPEN, CLOSE = "17:00", "22:00"
FULL = frozenset({"20:00"})
ALTERNATIVES = ("19:30", "21:00")


def check_availability(party_size: int, time: str, date: str = "today") -> dict[str, Any]:
    """Whether a table for `party_size` is free on `date` at `time` (HH:MM), with
    alternatives."""
    free = OPEN <= time <= CLOSE and time not in FULL
    others = [t for t in ALTERNATIVES if t != time]
    found = {"available": free, "time": time, "date": date, "party_size": party_size}
    return {**found, "alternatives": others}


def make_booking(party_size: int, time: str, date: str = "today") -> dict[str, Any]:
    """Book the table; the confirmation code depends only on the booking (a day other
    than today is part of it: `LM-1124-1900-04`)."""
    day = "" if date == "today" else date[5:].replace("-", "") + "-"
    code = f"LM-{day}{time.replace(':', '')}-{party_size:02d}"
    return {"code": code, "party_size": party_size, "date": date}
