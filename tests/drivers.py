"""The session and engine tests run through both drivers of the one engine.

Every test in `BOTH_DRIVERS` runs twice: with the blocking driver (`drive`, what `cgraph
run` uses) and with the asyncio driver (`drive_async` on a loop of its own, every model
awaited — litellm's model through the thin OpenAI-protocol client against the local
servers of the litellm tests — store statements, recalls and tools in threads: what the
server uses). The library's own seam (`cgraph.runtime.needs.DRIVER`) chooses; no test
changes for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cgraph.runtime.needs import DRIVER, drive, drive_on_loop

BOTH_DRIVERS = frozenset(
    {
        "test_session",
        "test_session_start",
        "test_engine",
        "test_streaming",
        "test_guards",
        "test_history",
        "test_flows",
        "test_flow_graphs",
        "test_flow_slots",
        "test_clarify",
        "test_calls",
        "test_litellm_http",
        "test_litellm_stream",
        "test_litellm_tools",
        "test_stream_deadline",
    }
)


def pytest_generate_tests(metafunc: Any) -> None:
    if metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_DRIVERS:
        metafunc.parametrize("driver", ["blocking", "async"], indirect=True)


@pytest.fixture(autouse=True)
def driver(request: Any) -> Iterator[str]:
    """The driver a test's sessions run their steps with (blocking unless parametrized)."""
    name = getattr(request, "param", "blocking")
    token = DRIVER.set(drive_on_loop if name == "async" else drive)
    yield name
    DRIVER.reset(token)
