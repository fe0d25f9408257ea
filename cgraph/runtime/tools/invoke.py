"""A loaded handler called: with its arguments and, when it takes one, an idempotency key.

A handler is a plain Python function taking the state's rendered `arguments` as keyword
arguments. If it accepts an `idempotency_key` parameter (or `**kwargs`) it also receives
one: the same key for the same step of the same session, also when a crashed session is
resumed and the step runs again — so a handler that remembers keys applies its effect once.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Mapping
from typing import Any

from cgraph.errors import ToolError
from cgraph.runtime.tools.load import Handler


def accepts_key(handler: Handler) -> bool:
    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == "idempotency_key" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
    )


def invoke(handler: Handler, arguments: Mapping[str, Any], key: str, name: str) -> Any:
    """`handler(**arguments)`, with the idempotency key when it takes one; any exception
    it raises (`SystemExit` too) is a `ToolError` naming the tool."""
    kwargs = dict(arguments)
    if accepts_key(handler):
        kwargs["idempotency_key"] = key
    try:
        return handler(**kwargs)
    except BaseException as err:  # the tool's failure, never the session's
        raise ToolError(f"tool `{name}` failed: {type(err).__name__}: {err}") from err


def not_json(value: Any) -> str | None:
    """Why `value` cannot cross between processes as JSON (None when it can)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as err:
        return str(err)
    return None


def returned(name: str, value: Any) -> Any:
    """A handler's result, once it is known to be JSON (a session keeps it in its log and
    a worker sends it over a pipe); `ToolError` naming the tool when it is not."""
    problem = not_json(value)
    if problem:
        raise ToolError(f"tool `{name}` returned a value that is not JSON ({problem})")
    return value


def call_tool(
    handler: Handler,
    arguments: Mapping[str, Any],
    *,
    timeout: float,
    idempotency_key: str,
    name: str = "tool",
) -> Any:
    """Call `handler(**arguments)` in a thread of this process (`isolation: thread`);
    `ToolError` on failure or timeout.

    A timed-out call cannot be killed (Python threads cannot be); it is abandoned in a
    daemon thread and its result ignored.
    """
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = invoke(handler, arguments, idempotency_key, name)
        except ToolError as err:  # reported to the caller's thread below
            outcome["error"] = err

    worker = threading.Thread(target=work, name=f"cgraph-tool-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ToolError(f"tool `{name}` timed out after {timeout:g}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
