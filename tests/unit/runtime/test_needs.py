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
