"""A session's waiters in one process: first come, first served, on the loop, and a wait
that runs out is the busy session's error."""

from __future__ import annotations

import asyncio

import pytest

from cgraph.errors import SessionBusy
from cgraph.serve.queues import Queues


def test_waiters_are_served_in_the_order_they_came_and_the_queue_is_dropped() -> None:
    async def run() -> tuple[list[int], int]:
        queues, served = Queues(), []

        async def message(n: int) -> None:
            async with queues.first("s", wait=5):
                served.append(n)
                await asyncio.sleep(0.01)  # the turn: the others wait on the loop

        async with asyncio.TaskGroup() as group:
            for n in range(20):
                group.create_task(message(n))
                await asyncio.sleep(0)  # each in the queue before the next comes
        return served, len(queues)

    served, left = asyncio.run(run())
    assert served == list(range(20)) and left == 0


def test_a_wait_that_runs_out_is_busy_and_leaves_the_queue_to_the_others() -> None:
    async def run() -> tuple[str, float, int]:
        queues = Queues()
        async with queues.first("s", wait=5) as left:
            with pytest.raises(SessionBusy) as refused:
                async with queues.first("s", wait=0.05):
                    raise AssertionError("the head of the queue is still there")
            async with queues.first("t", wait=0):  # another session waits for nothing
                pass
        return str(refused.value), left, len(queues)

    message, left, queued = asyncio.run(run())
    assert message.startswith("session `s` is busy with another turn")
    assert 4.9 < left <= 5 and queued == 0
