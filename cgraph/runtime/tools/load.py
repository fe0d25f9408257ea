"""A tool's `module:function` handler, found next to the graph first, imported once.

The module is looked up as a file under the graph's folder (`cgraph.spec.tool_files`, the
rule lint follows too), then on the Python path if the session's `Trust` allows it
(`cgraph.spec.trust`);
it is imported in the process that calls the handler: a session's tool worker by default,
the session's own for `isolation: thread`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from cgraph.errors import ToolError
from cgraph.spec.tool_files import local_module
from cgraph.spec.trust import Trust

Handler = Callable[..., Any]
_HANDLERS: dict[tuple[str, str, tuple[str, ...]], Handler] = {}
_LOCK = threading.Lock()


def load_handler(spec: str, base: Path | None = None, trust: Trust | None = None) -> Handler:
    """Import `module:function`, first as a file under `base` (the graph's folder), then
    from the Python path when `trust` allows the module (default `Trust()`: only files
    under `base`); cached per folder, spec and allowed modules."""
    trust = trust or Trust()
    key = (str(base or ""), spec, trust.modules)
    with _LOCK:
        cached = _HANDLERS.get(key)
        if cached is None:
            cached = _HANDLERS[key] = _load(spec, base, trust)
    return cached


def _load(spec: str, base: Path | None, trust: Trust) -> Handler:
    module_name, _, attr = spec.partition(":")
    module = _module(module_name, base, trust)
    handler = getattr(module, attr, None)
    if not callable(handler):
        raise ToolError(f"tool handler `{spec}`: `{module_name}` has no function `{attr}`")
    return handler  # type: ignore[no-any-return]


def _module(name: str, base: Path | None, trust: Trust) -> ModuleType:
    path = _file_of(name, base)
    if path is None and not trust.allows_module(name):  # lint says so first; this holds anyway
        where = f"a Python file in the graph's folder ({base})" if base else "a file of a graph"
        raise ToolError(
            f"tool module `{name}` is neither {where} nor an allowed module: a graph may not "
            f"run code from elsewhere (--allow-module {name.partition('.')[0]} allows it)"
        )
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
