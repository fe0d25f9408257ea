"""A time limit on Python code running in the current thread.

A render loop (`{% for i in range(100000) %}{% for j in range(100000) %}...`) has no
place where it asks whether to stop, and Python threads cannot be killed. When the time
is up, one watchdog thread (shared by every deadline, started on first use) raises
`DeadlineExceeded` *inside* the running thread (`PyThreadState_SetAsyncExc`), which
stops it at its next bytecode. A C call already running (one huge `str.replace`)
finishes first: the sandbox bounds those by size.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time


class DeadlineExceeded(BaseException):
    """Raised inside the running thread when its time is up.

    A BaseException, so the code being stopped cannot catch it with `except Exception`.
    """


class _Watchdog:
    def __init__(self) -> None:
        # Every render takes and releases the lock: held through the C-level lock, not the
        # Condition's Python `__enter__`.
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.due: dict[int, tuple[float, int]] = {}  # token → (monotonic due, thread id)
        self.fired: set[int] = set()
        self.tokens = itertools.count()
        self.thread: threading.Thread | None = None
        self.wakes_at = -math.inf  # when the watchdog next looks; -inf until it runs

    def start(self, seconds: float) -> int:
        with self.lock:
            token = next(self.tokens)
            self.due[token] = (time.monotonic() + seconds, threading.get_ident())
            if self.thread is None:
                self.thread = threading.Thread(target=self.run, name="cgraph-deadline", daemon=True)
                self.thread.start()
            # Waking the watchdog costs a thread switch per render: only when this
            # deadline is due before the one it is waiting for.
            if self.due[token][0] < self.wakes_at:
                self.changed.notify()
            return token

    def stop(self, token: int) -> None:
        with self.lock:
            _, thread = self.due.pop(token, (0.0, 0))
            if token in self.fired:
                self.fired.discard(token)
                _raise_in(thread, None)  # clear it if it has not surfaced yet

    def run(self) -> None:
        with self.changed:
            while True:
                now = time.monotonic()
                for token, (due, thread) in list(self.due.items()):
                    if due <= now and token not in self.fired:
                        self.fired.add(token)
                        _raise_in(thread, DeadlineExceeded)
                pending = [due for token, (due, _) in self.due.items() if token not in self.fired]
                self.wakes_at = min(pending, default=math.inf)
                self.changed.wait(self.wakes_at - now if pending else None)


_WATCHDOG = _Watchdog()


def _after_fork() -> None:
    global _WATCHDOG  # the parent's watchdog thread does not exist in a forked child
    _WATCHDOG = _Watchdog()


os.register_at_fork(after_in_child=_after_fork)


class deadline:  # lower case: it reads as a function, `with deadline(seconds):`
    """Run the `with` body for at most `seconds`; `DeadlineExceeded` past that.

    A class, not `@contextmanager`: it wraps every render, and the generator costs more
    than the watchdog's bookkeeping."""

    __slots__ = ("seconds", "token")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        self.token = _WATCHDOG.start(self.seconds)

    def __exit__(self, *_: object) -> None:
        _WATCHDOG.stop(self.token)


def _raise_in(thread_id: int, error: type[BaseException] | None) -> None:
    import ctypes  # only when a deadline passes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(error) if error else None
    )
