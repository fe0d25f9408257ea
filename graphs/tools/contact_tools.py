"""Tools for the example `contacts.yaml`: a small, fixed address book.

Pure, so the example runs offline and every outcome can be tested: the book always holds
the same two contacts, adding says what was added, and removing a handle the book does
not hold says so.
"""

from __future__ import annotations

from typing import Any

BOOK = {"@alex": "Alex Kim", "@bob": "Bob Lee"}


def list_contacts() -> dict[str, Any]:
    """The contacts, as "Name (@handle)" texts."""
    return {"contacts": [f"{name} ({handle})" for handle, name in BOOK.items()]}


def add_contact(handle: str, name: str) -> dict[str, Any]:
    """Add `name` under `handle`."""
    return {"added": True, "handle": handle, "name": name}


def remove_contact(handle: str) -> dict[str, Any]:
    """Remove the contact under `handle`; `removed` is false when there is none."""
    return {"removed": handle in BOOK, "handle": handle}
