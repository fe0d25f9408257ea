"""Tools for the example `restaurant_reservation.yaml`: a small, deterministic booking book.

In-memory and pure, so the example runs offline and every outcome can be tested: 20:00
is always full, every other time from 17:00 to 22:00 is free.
"""

from __future__ import annotations

from typing import Any

OPEN, CLOSE = "17:00", "22:00"
FULL = frozenset({"20:00"})
ALTERNATIVES = ("19:30", "21:00")


def check_availability(party_size: int, time: str) -> dict[str, Any]:
    """Whether a table for `party_size` is free at `time` (HH:MM), with alternatives."""
    free = OPEN <= time <= CLOSE and time not in FULL
    others = [t for t in ALTERNATIVES if t != time]
    return {"available": free, "time": time, "party_size": party_size, "alternatives": others}


def make_booking(party_size: int, time: str) -> dict[str, Any]:
    """Book the table; the confirmation code depends only on the booking."""
    return {"code": f"LM-{time.replace(':', '')}-{party_size:02d}", "party_size": party_size}
