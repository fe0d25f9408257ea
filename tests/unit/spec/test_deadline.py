"""The deadline: cheap to set, fired by one watchdog thread on time, never left behind, and
a watchdog that wakes about once per deadline's length while deadlines come."""

from __future__ import annotations

import math
import threading
import time

import pytest

from cgraph.spec import deadline as module
from cgraph.spec.deadline import LINGER, MIN_PAUSE, DeadlineExceeded, deadline

SLACK = 1.0
"""Seconds a busy machine may add to a thread's wake-up."""


class Counted(module._Watchdog):
    """A watchdog whose looks are counted."""

    def __init__(self) -> None:
        super().__init__()
        self.looks: list[float] = []

    def _look(self, now: float) -> float:
        self.looks.append(now)
        return super()._look(now)


@pytest.fixture
def watchdog(monkeypatch: pytest.MonkeyPatch) -> Counted:
    """A watchdog of the test's own (the process's has seen other tests' deadlines)."""
    fresh = Counted()
    monkeypatch.setattr(module, "_WATCHDOG", fresh)
    return fresh


def spin(seconds: float) -> float:
    """How long a loop ran under `deadline(seconds)` before it was stopped (a loop never
    stopped ends after 10 s more, and the test fails)."""
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(seconds):
        while time.monotonic() < start + seconds + 10:
            pass
    return time.monotonic() - start


def test_a_deadline_stops_a_loop_at_its_time(watchdog: Counted) -> None:
    assert 0.1 <= spin(0.1) < 0.1 + SLACK


def test_while_deadlines_come_the_watchdog_looks_about_once_per_their_length(
    watchdog: Counted,
) -> None:
    with deadline(0.05):
        pass  # a short one, then none for a while: the watchdog sleeps, and forgets it
    time.sleep(LINGER + 0.5)
    looked = len(watchdog.looks)
    finish = time.monotonic() + 2.0
    while time.monotonic() < finish:  # a server's renders: short, many a second
        with deadline(1.0):
            pass
        time.sleep(0.01)
    assert 1 <= len(watchdog.looks) - looked <= 4  # not 40, as at a tick of 1/20 s
    assert watchdog.awake  # still on its schedule: the next deadline costs no wake-up


def test_a_deadline_shorter_than_any_before_fires_at_its_own_time(
    watchdog: Counted,
) -> None:
    with deadline(30.0):
        pass  # the watchdog may now sleep for 30 s
    time.sleep(0.1)
    assert spin(0.2) < 0.2 + SLACK


def test_after_its_linger_the_watchdog_sleeps_and_a_new_deadline_wakes_it(
    watchdog: Counted,
) -> None:
    with deadline(0.2):
        pass
    time.sleep(LINGER + 0.6)
    assert not watchdog.awake
    looked = len(watchdog.looks)
    time.sleep(0.5)
    assert len(watchdog.looks) == looked  # asleep: no look
    assert spin(0.3) < 0.3 + SLACK


def test_deadlines_of_several_threads_each_fire_on_time(watchdog: Counted) -> None:
    took: list[float] = []
    threads = [threading.Thread(target=lambda s=s: took.append(spin(s))) for s in (0.2, 0.6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(took) == 2
    assert all(s <= t < s + SLACK for s, t in zip((0.2, 0.6), sorted(took), strict=True))


def test_a_deadline_whose_exit_was_cut_short_does_not_fire_again(watchdog: Counted) -> None:
    # The exception can surface in the `with`'s exit before the deadline is cleared: the
    # thread's slot is then left due in the past and marked fired. Set again, it must not
    # fire the old due time (a DeadlineExceeded out of the loop fails the test).
    with deadline(0.1):
        pass  # the watchdog now looks every 0.1 s
    slot = watchdog.slot()
    slot.due, slot.fired = time.monotonic() - 1, True
    finish, looked = time.monotonic() + 0.5, len(watchdog.looks)
    while time.monotonic() < finish:
        with deadline(5):
            time.sleep(0.01)
    assert len(watchdog.looks) - looked >= 3  # it looked meanwhile
    assert slot.due == math.inf and not slot.fired


def test_a_deadline_of_no_time_fires_at_once_and_spins_nothing(watchdog: Counted) -> None:
    assert spin(0) < SLACK
    time.sleep(0.5)
    assert len(watchdog.looks) < 0.55 / MIN_PAUSE  # a look every few ms at most, not a spin
    time.sleep(LINGER + 0.3)
    assert not watchdog.awake


def test_a_deadline_of_forever_never_fires_and_leaves_the_watchdog_working(
    watchdog: Counted,
) -> None:
    with deadline(math.inf):
        time.sleep(0.05)
    assert spin(0.2) < 0.2 + SLACK
