"""Tool handlers called with a timeout and, when they take one, an idempotency key."""

from __future__ import annotations

import pytest

from cgraph.errors import ToolError
from cgraph.runtime.tools.invoke import accepts_key, call_tool
from cgraph.runtime.tools.load import load_handler
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "runtime"


def test_handlers_load_from_the_graph_folder_and_are_cached() -> None:
    lookup = load_handler("tools_fixture:lookup", FOLDER)
    assert load_handler("tools_fixture:lookup", FOLDER) is lookup
    assert call_tool(lookup, {"query": "q"}, timeout=2, idempotency_key="k1") == {
        "query": "q",
        "hits": 3,
        "ok": True,
    }
    assert lookup.__globals__["CALLS"][-1] == {"query": "q", "limit": 3, "key": "k1"}


def test_failures_and_timeouts_are_tool_errors() -> None:
    with pytest.raises(ToolError, match="RuntimeError: the service is down"):
        call_tool(load_handler("tools_fixture:broken", FOLDER), {}, timeout=2, idempotency_key="k")
    with pytest.raises(ToolError, match=r"timed out after 0\.1s"):
        call_tool(
            load_handler("tools_fixture:slow", FOLDER),
            {"seconds": 2},
            timeout=0.1,
            idempotency_key="k",
        )


def test_the_key_is_passed_only_to_handlers_that_accept_it() -> None:
    no_key = load_handler("tools_fixture:no_key", FOLDER)
    assert not accepts_key(no_key) and accepts_key(load_handler("tools_fixture:broken", FOLDER))
    assert call_tool(no_key, {"value": 4}, timeout=2, idempotency_key="k") == 8
