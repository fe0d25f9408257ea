"""A time limit on Python code running in the current thread.

A render loop (`{% for i in range(100000) %}{% for j in range(100000) %}...`) has no
place where it asks whether to stop, and Python threads cannot be killed. When the time
is up, one watchdog thread (shared by every deadline, started on first use) raises
`DeadlineExceeded` *inside* the running thread (`PyThreadState_SetAsyncExc`), which
stops it at its next bytecode. A C call already running (one huge `str.replace`)
finishes first: the sandbox bounds those by size.

A deadline is set on every render, and most renders take microseconds, so setting one
must cost next to nothing: it writes the due time in the thread's own slot, without a
lock or waking a thread. The watchdog looks at the slots every `TICK` while any is set
(a deadline fires at most a tick late) and sleeps once none has been for `LINGER`.
"""

from __future__ import annotations

import math
import os
import threading
import time
from types import TracebackType

TICK = 0.05
"""Seconds between the watchdog's looks while a deadline is set."""
LINGER = 1.0
"""Seconds the watchdog keeps looking after the last deadline before it sleeps."""


class DeadlineExceeded(BaseException):
    """Raised inside the running thread when its time is up.

    A BaseException, so the code being stopped cannot catch it with `except Exception`.
    """


class _Slot:
    """One thread's deadline: its due time (infinite when none is set)."""

    __slots__ = ("due", "fired", "lock", "thread")

    def __init__(self, thread: int) -> None:
        self.due = math.inf
        self.fired = False
        self.lock = threading.Lock()  # firing and clearing never interleave
        self.thread = thread


class _Watchdog:
    def __init__(self) -> None:
        self.slots: dict[int, _Slot] = {}
        self.awake = False
        self.wake = threading.Event()
        self.starting = threading.Lock()
        self.thread: threading.Thread | None = None

    def slot(self) -> _Slot:
        ident = threading.get_ident()
        slot = self.slots.get(ident)
        if slot is None:
            slot = self.slots[ident] = _Slot(ident)
        return slot

    def arm(self, slot: _Slot, due: float) -> None:
        slot.due = due
        if slot.fired:  # the exit of a deadline that fired was cut short by its exception
            with slot.lock:  # after the new due time: the watchdog cannot fire the old one
                slot.fired = False
        # Read after the write: either the watchdog is awake and will see the due time on
        # its next look, or it announced sleep first and is woken here (see `run`).
        if not self.awake:
            self._wake_up()

    def disarm(self, slot: _Slot) -> None:
        with slot.lock:
            slot.due = math.inf
            if slot.fired:
                slot.fired = False
                _raise_in(slot.thread, None)  # clear it if it has not surfaced yet

    def _wake_up(self) -> None:
        if self.thread is None:
            with self.starting:
                if self.thread is None:
                    self.thread = threading.Thread(
                        target=self.run, name="cgraph-deadline", daemon=True
                    )
                    self.thread.start()
        self.wake.set()

    def run(self) -> None:
        while True:
            self.awake = True
            idle = 0.0
            while idle < LINGER:  # renders come in bursts: waking costs a thread switch
                idle = 0.0 if self._look() else idle + TICK
                time.sleep(TICK)
            self.wake.clear()
            self.awake = False
            if not self._look():  # a deadline set just before `awake` went False
                self.wake.wait()

    def _look(self) -> bool:
        """Fire every deadline that is due; whether any is set."""
        now, armed = time.monotonic(), False
        for slot in list(self.slots.values()):
            if slot.due == math.inf:
                continue
            armed = True
            if slot.due <= now and not slot.fired:
                with slot.lock:
                    if slot.due <= now and not slot.fired:
                        slot.fired = True
                        _raise_in(slot.thread, DeadlineExceeded)
        return armed


_WATCHDOG = _Watchdog()


def _after_fork() -> None:
    global _WATCHDOG  # the parent's watchdog thread does not exist in a forked child
    _WATCHDOG = _Watchdog()


os.register_at_fork(after_in_child=_after_fork)


class _Deadline:
    __slots__ = ("seconds", "slot")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __enter__(self) -> None:
        self.slot = _WATCHDOG.slot()
        _WATCHDOG.arm(self.slot, time.monotonic() + self.seconds)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _WATCHDOG.disarm(self.slot)


def deadline(seconds: float) -> _Deadline:
    """Run the `with` body for at most `seconds`; `DeadlineExceeded` past that.

    One at a time per thread: a deadline inside another replaces it."""
    return _Deadline(seconds)


def _raise_in(thread_id: int, error: type[BaseException] | None) -> None:
    import ctypes  # only when a deadline passes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(error) if error else None
    )
