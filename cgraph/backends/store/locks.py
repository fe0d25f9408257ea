"""One writer per session: the locks behind `SessionStore.hold` for the stores on one
machine (a PostgreSQL store takes an advisory lock instead).

A file store locks a file per session with an OS lock (`flock`), which every process on the
machine sees and which the kernel lets go when its holder dies, killed or not. A lock file
is per open file description, so two threads of one process exclude each other too. An
in-memory store's sessions live in one process: a `threading.Lock` per session is enough.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cgraph.errors import SessionBusy, StoreError

POLL = 0.005
"""Seconds between two tries of a taken file lock (`flock` cannot wait with a bound)."""


def busy(session_id: str) -> SessionBusy:
    """The one error a store raises when another holder keeps the session."""
    return SessionBusy(
        f"session `{session_id}` is busy with another turn (in this process or another); "
        "try again when it is done"
    )


def file_name(session_id: str) -> str:
    """A session id as a safe file name (ids are free text)."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:24]


@contextmanager
def file_lock(folder: Path, session_id: str, wait: float) -> Iterator[None]:
    """Hold `folder/<digest of the id>.lock`; `SessionBusy` after `wait` seconds."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks: the store still refuses a second writer's step
        yield
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / f"{file_name(session_id)}.lock").open("ab")
    except OSError as err:
        raise StoreError(f"{folder}: cannot lock session `{session_id}` ({err.strerror})") from err
    with handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise busy(session_id) from None
                time.sleep(POLL)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class ThreadLocks:
    """A lock per session for stores that live in one process."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextmanager
    def hold(self, session_id: str, wait: float) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(session_id, threading.Lock())
        taken = lock.acquire(timeout=wait) if wait > 0 else lock.acquire(blocking=False)
        if not taken:
            raise busy(session_id)
        try:
            yield
        finally:
            lock.release()
