"""The two drivers of the sans-IO engine: what a step yields is done, its error thrown in."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cgraph.errors import LLMError
from cgraph.runtime.needs import Complete, Offload, Steps, drive, drive_async
from cgraph.runtime.ports import Capabilities, LLMRequest


class Model:
    name = "fake"

    def __init__(self, awaits: bool, fail: bool = False) -> None:
        self.capabilities = Capabilities(awaits=awaits)
        self.fail = fail
        self.calls: list[str] = []

    def complete(self, request: LLMRequest) -> str:
        self.calls.append("complete")
        if self.fail:
            raise LLMError("down")
        return "blocking"

    async def acomplete(self, request: LLMRequest) -> str:
        self.calls.append("acomplete")
        if self.fail:
            raise LLMError("down")
        return "awaited"


REQUEST = LLMRequest(kind="action", messages=(), schema={}, schema_name="a", state="a")


def steps(model: Any) -> Steps[list[str]]:
    seen: list[str] = []
    try:
        seen.append(
            (
                yield Complete(
                    model,
                    LLMRequest(kind="action", messages=(), schema={}, schema_name="a", state="a"),
                )
            )
        )
    except LLMError as err:  # the step's own `try` sees the call's error
        seen.append(f"failed: {err.message}")
    seen.append((yield Offload(lambda: "offloaded", "store")))
    return seen


async def offload(need: Offload) -> Any:
    return await asyncio.to_thread(need.call)


@pytest.mark.parametrize("awaits", [True, False])
def test_the_blocking_driver_calls_the_model_here(awaits: bool) -> None:
    model = Model(awaits)
    assert drive(steps(model)) == ["blocking", "offloaded"]
    assert model.calls == ["complete"]


def test_the_async_driver_awaits_a_model_that_awaits() -> None:
    model = Model(True)
    assert asyncio.run(drive_async(steps(model), offload)) == ["awaited", "offloaded"]
    assert model.calls == ["acomplete"]


def test_the_async_driver_offloads_a_model_that_only_blocks() -> None:
    model = Model(False)
    assert asyncio.run(drive_async(steps(model), offload)) == ["blocking", "offloaded"]


@pytest.mark.parametrize("driver", ["blocking", "async"])
def test_an_error_is_thrown_in_where_the_step_waited(driver: str) -> None:
    model = Model(True, fail=True)
    if driver == "blocking":
        run = drive(steps(model))
    else:
        run = asyncio.run(drive_async(steps(model), offload))
    assert run == ["failed: down", "offloaded"]


@pytest.mark.parametrize("driver", ["blocking", "async"])
def test_an_error_the_step_does_not_catch_reaches_the_caller(driver: str) -> None:
    def failing() -> Steps[None]:
        yield Offload(lambda: 1 / 0, "tool")

    with pytest.raises(ZeroDivisionError):
        if driver == "blocking":
            drive(failing())
        else:
            asyncio.run(drive_async(failing(), offload))


def test_a_run_of_blocking_needs_is_one_hop_and_an_awaited_model_hands_the_steps_back() -> None:
    """The steps between two awaited calls go on in the worker: three statements and a
    model that only blocks are one hop; the model that awaits is awaited on the loop."""
    import threading

    hops: list[str] = []
    where: list[bool] = []
    loop_thread = threading.get_ident()

    async def counted(need: Offload) -> Any:
        hops.append(need.work)
        return await asyncio.to_thread(need.call)

    def here() -> None:
        where.append(threading.get_ident() == loop_thread)

    def turn() -> Steps[list[str]]:
        seen = [(yield Offload(lambda: "one", "store"))]
        here()
        seen.append((yield Offload(lambda: "two", "store")))
        seen.append((yield Complete(Model(False), REQUEST)))
        seen.append((yield Complete(Model(True), REQUEST)))
        here()
        seen.append((yield Offload(lambda: "three", "store")))
        return seen

    answers = asyncio.run(drive_async(turn(), counted))
    assert answers == ["one", "two", "blocking", "awaited", "three"]
    assert hops == ["store", "store"] and where == [False, True]


def test_a_cancellation_during_a_hop_is_thrown_in_once_the_worker_hands_the_steps_back() -> None:
    import threading

    started, release = threading.Event(), threading.Event()
    seen: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(10)
        return "committed"

    def turn() -> Steps[None]:
        seen.append((yield Offload(slow, "store")))
        try:
            yield Complete(Model(True), REQUEST)
        except asyncio.CancelledError:
            seen.append("cancelled at the model")
            seen.append((yield Offload(lambda: "reloaded", "store")))
            raise

    async def main() -> None:
        task = asyncio.ensure_future(drive_async(turn(), offload))
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # the worker still has the steps
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["committed", "cancelled at the model", "reloaded"]


def test_a_cancelled_run_that_finished_in_the_worker_still_raises_the_cancellation() -> None:
    import threading

    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "done"

    def turn() -> Steps[str]:
        return (yield Offload(slow, "store"))

    async def main() -> None:
        task = asyncio.ensure_future(drive_async(turn(), offload))
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_an_offload_with_an_acall_is_awaited_on_the_loop_and_called_by_the_blocking_driver() -> (
    None
):
    hops: list[str] = []

    async def counted(need: Offload) -> Any:
        hops.append(need.work)
        return await offload(need)

    async def awaited() -> str:
        await asyncio.sleep(0)
        return "awaited commit"

    def turn() -> Steps[list[str]]:
        seen = [(yield Offload(lambda: "blocking commit", "store", awaited))]
        seen.append((yield Offload(lambda: "recalled", "memory")))
        return seen

    assert drive(turn()) == ["blocking commit", "recalled"]
    assert asyncio.run(drive_async(turn(), counted)) == ["awaited commit", "recalled"]
    assert hops == ["memory"]  # the commit took no hop to a worker


def test_a_cancelled_awaited_call_finishes_and_the_cancellation_is_thrown_in_at_the_next_need() -> (
    None
):
    started, release = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    async def commit() -> str:
        started.set()
        await release.wait()
        return "committed"

    def turn() -> Steps[None]:
        seen.append((yield Offload(lambda: "blocking", "store", commit)))
        try:
            yield Complete(Model(True), REQUEST)
        except asyncio.CancelledError:
            seen.append("cancelled at the model")
            raise

    async def main() -> None:
        task = asyncio.ensure_future(drive_async(turn(), offload))
        await started.wait()
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # the commit under way is not abandoned
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["committed", "cancelled at the model"]


def test_an_awaited_calls_error_is_thrown_in_where_the_step_waited() -> None:
    async def refused() -> str:
        raise LLMError("refused")

    def turn() -> Steps[str]:
        try:
            yield Offload(lambda: "never", "store", refused)
        except LLMError as err:
            return f"failed: {err.message}"
        return "no error"

    assert asyncio.run(drive_async(turn(), offload)) == "failed: refused"
