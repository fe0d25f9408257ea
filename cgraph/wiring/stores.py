"""Session stores by name: a folder, a `.sqlite` file, a database server's URL, or none.

`STORES` maps a kind to its factory; `store_kind` reads the kind from what was given, and
an unknown one (a URL scheme cgraph has no store for) lists the valid forms.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.backends.store.sqlite import SQLiteStore
from cgraph.errors import StoreError
from cgraph.runtime.ports import Delivery as Delivery  # for the server to name
from cgraph.runtime.ports import Outbox as Outbox
from cgraph.runtime.ports import SessionStore as SessionStore

STORE_FILE = "sessions.sqlite"
SQLITE_SUFFIXES = (".sqlite", ".db", ".sqlite3")
URL_SCHEMES = ("postgresql://", "postgres://")
"""Store names that are a database server's URL (`cgraph.backends.store.postgres`)."""
VALID = "a folder, a .sqlite file, a postgresql:// URL, a SessionStore or None (in memory)"


def _postgres(store: Any, most: int | None) -> SessionStore:
    from cgraph.backends.store.postgres import PostgresStore  # psycopg: only for a URL

    return PostgresStore(str(store), sessions_per_user=most)


def _sqlite(store: Any, most: int | None) -> SessionStore:
    return SQLiteStore(sqlite_file(Path(store)), sessions_per_user=most)


STORES: dict[str, Callable[[Any, int | None], SessionStore]] = {
    "memory": lambda _, most: InMemorySessionStore(sessions_per_user=most),
    "postgresql": _postgres,
    "sqlite": _sqlite,
}
"""Each kind of store and how it is opened from what names it (and the sessions one user
may keep in it, None: any number)."""


def is_url(store: Any) -> bool:
    """Whether `store` names a database server rather than a folder or a file."""
    return isinstance(store, str) and store.startswith(URL_SCHEMES)


def sqlite_file(path: Path) -> Path:
    """A `.sqlite` file as named, else `<folder>/sessions.sqlite`."""
    return path if path.suffix in SQLITE_SUFFIXES else path / STORE_FILE


def store_kind(store: Any) -> str:
    """The `STORES` entry for `store`; `StoreError` listing the valid forms otherwise."""
    if store is None:
        return "memory"
    if is_url(store):
        return "postgresql"
    if isinstance(store, str) and "://" in store:
        scheme = store.partition("://")[0]
        raise StoreError(f"no store for `{scheme}://` URLs: the store is {VALID}")
    if isinstance(store, str | Path):
        return "sqlite"
    raise StoreError(f"store must be {VALID}, not {store!r}")


def open_store(store: Any, *, sessions_per_user: int | None = None) -> SessionStore:
    """A `SessionStore` as given, else the store `store` names (`STORES`). With
    `sessions_per_user`, a store it opens refuses a user's session beyond that many
    (`SessionQuota`), counted and created as one."""
    if isinstance(store, SessionStore):
        return store
    return STORES[store_kind(store)](store, sessions_per_user)


def migrate_store(store: str | Path) -> tuple[int, int]:
    """Bring a store's tables to this cgraph's layout: (version before, version now)."""
    if is_url(store):
        from cgraph.backends.store.postgres import migrate

        return migrate(str(store))
    from cgraph.backends.store.sqlite import migrate_file

    return migrate_file(sqlite_file(Path(store)))
