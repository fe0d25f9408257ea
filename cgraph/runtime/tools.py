"""Side-effect tools: `module:function` handlers, loaded next to the graph, called with a timeout.

This module loads and calls a handler in the process it runs in: a session's tool worker
(`cgraph.runtime.toolworker`, by default), or the session's own (`isolation: thread`).

A handler is a plain Python function taking the state's rendered `arguments` as keyword
arguments. If it accepts an `idempotency_key` parameter (or `**kwargs`) it also receives
one: the same key for the same step of the same session, also when a crashed session is
resumed and the step runs again — so a handler that remembers keys applies its effect once.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from cgraph.errors import ToolError
from cgraph.spec.tool_files import local_module

Handler = Callable[..., Any]
_HANDLERS: dict[tuple[str, str], Handler] = {}
_LOCK = threading.Lock()


def load_handler(spec: str, base: Path | None = None) -> Handler:
    """Import `module:function`, first as a file under `base` (the graph's folder), then
    from the Python path; cached per folder and spec."""
    key = (str(base or ""), spec)
    with _LOCK:
        cached = _HANDLERS.get(key)
        if cached is None:
            cached = _HANDLERS[key] = _load(spec, base)
    return cached


def _load(spec: str, base: Path | None) -> Handler:
    module_name, _, attr = spec.partition(":")
    module = _module(module_name, base)
    handler = getattr(module, attr, None)
    if not callable(handler):
        raise ToolError(f"tool handler `{spec}`: `{module_name}` has no function `{attr}`")
    return handler  # type: ignore[no-any-return]


def _module(name: str, base: Path | None) -> ModuleType:
    path = _file_of(name, base)
    try:
        if path is None:
            return importlib.import_module(name)
        # A unique module name per file, so two graphs' `tools.py` never shadow each other.
        unique = f"_cgraph_tool_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
        loaded = importlib.util.spec_from_file_location(unique, path)
        if loaded is None or loaded.loader is None:
            raise ToolError(f"cannot load {path}")
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
        return module
    except Exception as err:  # any error in the tool's own module is the tool's failure
        where = f" (looked in {base} and the Python path)" if base else ""
        raise ToolError(f"cannot import tool module `{name}`{where}: {err}") from err


def _file_of(name: str, base: Path | None) -> Path | None:
    found = local_module(name, base) if base is not None else None
    return found.resolve() if found is not None else None


def argument_errors(parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Why `arguments` do not fit the tool's `parameters` JSON Schema (empty when they do)."""
    from jsonschema import Draft202012Validator  # only when a tool is called

    validator = Draft202012Validator(dict(parameters))
    found = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    return [_located(error.path, error.message) for error in found]


def _located(path: Any, message: str) -> str:
    where = ".".join(str(step) for step in path)
    return f"`{where}`: {message}" if where else message


def check_arguments(name: str, parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """`ToolError` naming every argument that does not fit the tool's parameters."""
    errors = argument_errors(parameters, arguments)
    if errors:
        raise ToolError(f"tool `{name}` got invalid arguments: {'; '.join(errors)}")


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
