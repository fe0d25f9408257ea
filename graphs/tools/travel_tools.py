"""Tools for the example `travel_agent.yaml`: a deterministic flight booking desk.

Pure, so the example runs offline and every booking can be tested: the confirmation code
is made of the destination, the class, the day of departure and the nights away.
"""

from __future__ import annotations


def book_flight(destination: str, departure_date: str, nights: int, travel_class: str) -> str:
    """Book a return flight of `nights` nights; its confirmation code depends only on the
    booking (`TO-B-1204-05`)."""
    day = departure_date[5:].replace("-", "")
    return f"{destination[:2].upper()}-{travel_class[0].upper()}-{day}-{nights:02d}"
