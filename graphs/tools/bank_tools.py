"""Tools for the example `money_transfer.yaml`: a pretend account, deterministic and offline."""

from __future__ import annotations

from typing import Any

BALANCE = 1000.0


def get_balance() -> float:
    """The account's balance."""
    return BALANCE


def execute_transfer(recipient: str, amount: float) -> dict[str, Any]:
    """Send `amount` to `recipient`; the reference depends only on the transfer."""
    if amount > BALANCE:
        raise ValueError(f"{amount} is more than the balance {BALANCE}")
    return {"reference": f"TX-{recipient.upper()}-{int(amount * 100)}", "balance": BALANCE - amount}
