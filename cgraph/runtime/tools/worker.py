"""The tool worker: a separate Python process that runs tool handlers for one session.

Started by `cgraph.runtime.tools.process` with the session's Python path. It reads one JSON
request a line and, after a first `{"ready": pid}`, writes JSON replies a line:

- a call (`handler`, `folder`, `trust`, `name`, `arguments`, `key`) gets `{"loaded": true}`
  once the handler is imported, then `{"result": ...}` or `{"error": ...}` (only the
  error when it cannot be imported): the session times the handler, not its import;
- `{"preload": [{"handler", "folder", "trust"}, ...]}` imports those handlers ahead of
  their first call, and gets no reply (a failure is reported by the call).

`trust` is the session's `Trust` as data (`Trust.as_data`): the modules a handler may come
from travel with each request, never through the worker's environment.

The protocol has its own copies of the pipes: a handler's prints (fd 1) go to stderr and
its `input()` reads nothing, so neither can corrupt a reply nor the session's output.

It exits as soon as its parent is gone (the request pipe closes, or it is re-parented),
also in the middle of a handler, and kills what the handlers started as it goes (it is a
child subreaper: see `cgraph.runtime.tools.contain`): neither the worker nor what a
handler started outlives the session.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

# Imported before the worker says it is ready, so a first call does not wait for them.
from cgraph.errors import ToolError
from cgraph.runtime.tools.contain import MARK, become_subreaper, kill_all, reap
from cgraph.runtime.tools.invoke import invoke, returned
from cgraph.runtime.tools.load import load_handler
from cgraph.spec.trust import Trust, trust_of

PARENT_POLL = 0.5
"""Seconds between checks that the parent still lives (the pipe closing is seen at once)."""


def serve() -> None:
    """Answer requests until the parent closes the pipe or dies."""
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    requests_in = os.fdopen(os.dup(0), "rb")
    _redirect_standard_streams()
    become_subreaper()  # an orphan of a handler's process stays in this tree
    requests: queue.Queue[dict[str, Any]] = queue.Queue()
    threading.Thread(target=_read, args=(requests_in, requests), daemon=True).start()
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    _send(replies, {"ready": os.getpid()})
    while True:
        request = requests.get()
        if "preload" in request:
            preload(request["preload"])
            continue
        for reply in answer(request):
            _send(replies, reply)
        reap()  # the orphans that ended, adopted as a subreaper


def _redirect_standard_streams() -> None:
    """fd 1 becomes stderr and fd 0 /dev/null, for Python and C code alike."""
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _read(stream: BinaryIO, requests: queue.Queue[dict[str, Any]]) -> None:
    for line in stream:
        requests.put(json.loads(line))
    _end()  # the parent closed the pipe, or died: stop, even inside a handler


def _watch_parent(parent: int) -> None:
    # The pipe may stay open when the parent forked before dying; the parent id does not.
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    _end()


def _end() -> None:
    """Exit, and take along whatever the handlers started: the worker's descendants and
    marked processes (`cgraph.runtime.tools.contain`), and its process group."""
    with contextlib.suppress(OSError):
        kill_all(os.environ.get(MARK, ""), os.getpid())
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)
    os._exit(0)


def _send(replies: BinaryIO, reply: dict[str, Any]) -> None:
    line = json.dumps(reply, ensure_ascii=False, allow_nan=False).encode() + b"\n"
    try:
        replies.write(line)
    except OSError:  # the parent is gone (or closed the pipe): nobody is left to answer
        _end()


def answer(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The replies to a call: loaded, then the handler's result as JSON or why there is
    none."""
    name = request["name"]
    try:
        handler = load_handler(request["handler"], _folder(request), _trust(request))
    except ToolError as err:
        yield {"error": err.message}
        return
    yield {"loaded": True}
    try:
        result = returned(name, invoke(handler, request["arguments"], request["key"], name))
    except ToolError as err:
        yield {"error": err.message}
        return
    yield {"result": result}


def preload(handlers: list[dict[str, Any]]) -> None:
    for spec in handlers:
        # A handler that cannot be imported fails its call, which says why.
        with contextlib.suppress(ToolError):
            load_handler(spec["handler"], _folder(spec), _trust(spec))


def _folder(request: dict[str, Any]) -> Path | None:
    return Path(request["folder"]) if request.get("folder") else None


def _trust(request: dict[str, Any]) -> Trust:
    return trust_of(request.get("trust") or {})


if __name__ == "__main__":
    serve()
