"""Tools for the example `library_reservation.yaml`: a small, deterministic catalogue."""

from __future__ import annotations

from typing import Any

CATALOGUE = {
    "the hobbit": {"title": "The Hobbit", "author": "J. R. R. Tolkien", "copies": 3},
    "dune": {"title": "Dune", "author": "Frank Herbert", "copies": 0},
    "middlemarch": {"title": "Middlemarch", "author": "George Eliot", "copies": 1},
}


def search_catalogue(query: str) -> list[dict[str, Any]]:
    """The books whose title or author contains `query` (case-insensitive)."""
    wanted = query.casefold()
    return [b for b in CATALOGUE.values() if wanted in f"{b['title']} {b['author']}".casefold()]


def place_hold(card: str, title: str, branch: str) -> dict[str, Any]:
    """Place a hold; a title with no copy in the catalogue fails."""
    book = CATALOGUE.get(title.casefold())
    if book is None or not book["copies"]:
        raise LookupError(f"no copy of {title!r} to hold")
    return {"code": f"H-{card[-4:]}-{branch[:3].upper()}", "title": title, "branch": branch}
