"""A time limit on Python code running in the current thread.

A render loop (`{% for i in range(100000) %}{% for j in range(100000) %}...`) has no
place where it asks whether to stop, and Python threads cannot be killed. When the time
is up, one watchdog thread (shared by every deadline, started on first use) raises
`DeadlineExceeded` *inside* the running thread (`PyThreadState_SetAsyncExc`), which
stops it at its next bytecode. A C call already running (one huge `str.replace`)
finishes first: the sandbox bounds those by size.

A deadline is set on every render, and most renders take microseconds, so setting one
must cost next to nothing: it writes the due time in the thread's own slot, without a
lock or waking a thread. Nor may the watchdog cost much while renders come: it looks at
the slots when the first deadline set may be due, and sleeps until the next may be (a
deadline set after a look is due at least the shortest deadline's seconds after it, so a
deadline fires within milliseconds of its time), so on a server rendering all day it
wakes about once per `RENDER_SECONDS`, not at a fixed tick (20 looks a second cost 3 ms
of CPU a second, 0.2 ms a turn at 16 turns a second); a deadline shorter than any
since it last slept wakes it. Once no deadline has been set for `LINGER`, it sleeps until
the next is.
"""

from __future__ import annotations

import math
import os
import threading
import time
from types import TracebackType

LINGER = 1.0
"""Seconds the watchdog keeps its schedule after the last deadline before it sleeps (a
deadline set while it sleeps costs a thread's wake-up); also its longest sleep while
awake."""
MIN_PAUSE = 0.005
"""Its shortest sleep: a deadline of no time at all fires a few milliseconds late, not by
a spin."""


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
        self.shortest = math.inf
        """The fewest seconds a deadline was set for since the watchdog last slept: none
        set after a look is due sooner."""
        self.used = False
        """Whether a deadline was set since the watchdog's last look."""

    def slot(self) -> _Slot:
        ident = threading.get_ident()
        slot = self.slots.get(ident)
        if slot is None:
            slot = self.slots[ident] = _Slot(ident)
        return slot

    def arm(self, slot: _Slot, seconds: float) -> None:
        slot.due = time.monotonic() + seconds
        self.used = True
        if slot.fired:  # the exit of a deadline that fired was cut short by its exception
            with slot.lock:  # after the new due time: the watchdog cannot fire the old one
                slot.fired = False
        if seconds < self.shortest:  # sooner than the watchdog may be sleeping for
            self.shortest = seconds
            self._wake_up()
        # Read after the writes: either the watchdog is awake and will see the due time
        # by its next look, or it announced sleep first and is woken here (see `run`).
        elif not self.awake:
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
            self.awake, active = True, time.monotonic()
            while True:
                self.wake.clear()
                looked, self.used = time.monotonic(), False
                soonest = self._look(looked)
                if soonest < math.inf:
                    active = looked
                elif looked - active >= LINGER:
                    break
                due = min(soonest, looked + self.shortest)
                self.wake.wait(min(max(due - looked, MIN_PAUSE), LINGER))  # set: a shorter one
                if self.used:
                    active = time.monotonic()
            self.awake = False
            self.shortest = math.inf  # the next deadlines set the next schedule
            self.wake.clear()
            if math.isinf(self._look(time.monotonic())) and not self.used:
                self.wake.wait()  # a deadline set just before `awake` went False sees it

    def _look(self, now: float) -> float:
        """Fire every deadline that is due; when the next one set is."""
        soonest = math.inf
        for slot in list(self.slots.values()):
            if slot.due == math.inf:
                continue
            if slot.due <= now:
                with slot.lock:
                    if slot.due <= now and not slot.fired:
                        slot.fired = True
                        _raise_in(slot.thread, DeadlineExceeded)
                continue
            soonest = min(soonest, slot.due)
        return soonest


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
        _WATCHDOG.arm(self.slot, self.seconds)

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
