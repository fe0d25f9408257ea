"""Tools for the example `unblock_card.yaml`: a few customers' cards, fixed and offline.

Pure, so every outcome can be tested: customer C-100 has a blocked card ending in 4321,
C-200 has none, and C-300's blocked card (ending in 9999) cannot be unblocked now.
"""

from __future__ import annotations

from typing import Any

BLOCKED = {"C-100": "4321", "C-300": "9999"}
STUCK = frozenset({"9999"})


def find_blocked_card(customer: str) -> dict[str, Any]:
    """The last four digits of the customer's blocked card (`card`), null when none is."""
    return {"card": BLOCKED.get(customer)}


def unblock_card(customer: str, card: str) -> dict[str, Any]:
    """Unblock the card: `status` is `success`, or `failed` when the bank cannot now."""
    if BLOCKED.get(customer) != card:
        raise ValueError(f"{customer} has no blocked card ending in {card}")
    return {"status": "failed" if card in STUCK else "success", "card": card}
