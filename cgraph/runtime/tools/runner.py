"""How a session runs its tools: in tool worker processes (the default), or in a thread of
its own process for a tool declared `isolation: thread`.

A worker is started in the background when a graph with tools starts or resumes (or at the
first call) and reused call after call. A call that times out kills its worker, and one
that crashes it (a segfault, `os._exit`, a signal) is a `ToolError` saying so; either way
the next call gets a fresh worker and the session goes on. Calls run at once (the model's
parallel calls) each get a worker of their own. The workers die with the session
(`close`, or when the runner is collected or the process exits) and, without one, by
themselves (`cgraph.runtime.tools.worker`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cgraph.errors import ToolError
from cgraph.runtime.tools.invoke import call_tool, not_json, returned
from cgraph.runtime.tools.load import load_handler
from cgraph.runtime.tools.process import STARTUP_LIMIT, Worker, WorkerGone
from cgraph.spec.model import Tool
from cgraph.spec.trust import Trust


class ToolRunner:
    """A session's tool workers: idle ones are reused, broken ones replaced."""

    def __init__(self) -> None:
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _stop_all, self._all)

    def warm(
        self, tools: Sequence[tuple[Tool, Path | None]] = (), trust: Trust | None = None
    ) -> None:
        """Start a worker now, so the first call does not wait for one to boot, and have
        it import the handlers of `tools` (each from its folder, modules `trust` allows)
        meanwhile. Best effort: a worker that cannot start is reported by the first call."""
        with self._lock:
            if self._idle:
                return
            try:
                worker = self._spawn()
            except ToolError:
                return
            try:
                if tools:
                    where = [_where(tool, folder, trust) for tool, folder in tools]
                    worker.send({"preload": where})
            except WorkerGone:
                self._forget(worker)
                return
            self._idle.append(worker)

    def call(
        self,
        tool: Tool,
        folder: Path | None,
        arguments: Mapping[str, Any],
        key: str,
        trust: Trust | None = None,
    ) -> Any:
        """The tool's result, as JSON; `ToolError` when it fails, times out or crashes.
        Its handler is a file under `folder`, or a module `trust` allows (default
        `Trust()`: none); a worker is told so with the call."""
        if tool.isolation == "thread":
            handler = load_handler(tool.handler, folder, trust)
            result = call_tool(
                handler, arguments, timeout=tool.timeout, idempotency_key=key, name=tool.name
            )
            return returned(tool.name, result)
        return self._in_worker(tool, folder, arguments, key, trust)

    def _in_worker(
        self,
        tool: Tool,
        folder: Path | None,
        arguments: Mapping[str, Any],
        key: str,
        trust: Trust | None,
    ) -> Any:
        problem = not_json(dict(arguments))
        if problem:
            raise ToolError(f"tool `{tool.name}` got arguments that are not JSON ({problem})")
        request = {**_where(tool, folder, trust), "name": tool.name, "arguments": dict(arguments)}
        worker = self._take()
        try:
            reply = self._exchange(worker, tool, {**request, "key": key})
        except WorkerGone as gone:
            self._drop(worker)
            raise ToolError(f"tool `{tool.name}` crashed the tool worker: {gone.why}") from gone
        except BaseException:  # a timeout, Ctrl-C, a failed start: the call is abandoned
            self._drop(worker)
            raise
        self._give_back(worker)
        if "error" in reply:
            raise ToolError(str(reply["error"]))
        return reply.get("result")

    def _exchange(self, worker: Worker, tool: Tool, request: dict[str, Any]) -> dict[str, Any]:
        """The call's final reply; the tool's timeout runs once its handler is imported."""
        worker.send(request)
        loaded = worker.receive(STARTUP_LIMIT)
        if loaded is None:
            raise ToolError(
                f"tool `{tool.name}`: its module did not import within {STARTUP_LIMIT:g}s "
                "(its worker was stopped)"
            )
        if "loaded" not in loaded:
            return loaded  # the import failed; the worker says why
        reply = worker.receive(tool.timeout)
        if reply is None:
            raise ToolError(
                f"tool `{tool.name}` timed out after {tool.timeout:g}s (its worker was stopped)"
            )
        return reply

    def _spawn(self) -> Worker:
        worker = Worker()
        self._all.add(worker)
        return worker

    def _take(self) -> Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                self._forget(worker)
            return self._spawn()

    def _give_back(self, worker: Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _drop(self, worker: Worker) -> None:
        with self._lock:
            self._forget(worker)

    def _forget(self, worker: Worker) -> None:
        worker.stop()
        self._all.discard(worker)

    def workers(self) -> tuple[int, ...]:
        """The process ids of the live workers."""
        with self._lock:
            return tuple(w.pid for w in self._all if w.alive())

    def close(self) -> None:
        """Stop every worker; a later call starts a new one."""
        with self._lock:
            self._idle.clear()
            _stop_all(self._all)


def _where(tool: Tool, folder: Path | None, trust: Trust | None) -> dict[str, Any]:
    return {
        "handler": tool.handler,
        "folder": str(folder) if folder is not None else None,
        "trust": (trust or Trust()).as_data(),
    }


def _stop_all(workers: set[Worker]) -> None:
    for worker in list(workers):
        worker.stop()
    workers.clear()
