"""Pretend tools of the fifth development set's graphs (never run by the fit)."""

from __future__ import annotations


def create_return(order: str) -> dict[str, str]:
    return {"label": f"L-{order}"}


def cancel_membership() -> dict[str, str]:
    return {"ends": "end of month"}


def place_order(medicine: str) -> dict[str, str]:
    return {"reference": f"RX-{medicine.upper()}"}


def take_payment(amount: float) -> dict[str, float]:
    return {"paid": amount}
