"""The deadline: cheap to set, fired by one watchdog thread, never left behind."""

from __future__ import annotations

import math
import time

import pytest

from cgraph.spec import deadline as module
from cgraph.spec.deadline import TICK, DeadlineExceeded, deadline


def test_a_deadline_stops_a_loop_within_a_tick_of_its_time() -> None:
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(0.1):
        while True:
            pass
    assert time.monotonic() - start < 0.1 + TICK + 1.0  # plus a busy machine


def test_a_deadline_whose_exit_was_cut_short_does_not_fire_again() -> None:
    # The exception can surface in the `with`'s exit before the deadline is cleared: the
    # thread's slot is then left due in the past and marked fired.
    slot = module._WATCHDOG.slot()
    slot.due, slot.fired = time.monotonic() - 1, True
    finish = time.monotonic() + 4 * TICK
    while time.monotonic() < finish:  # the watchdog looks several times meanwhile
        with deadline(5):
            time.sleep(TICK / 4)
    assert slot.due == math.inf and not slot.fired
