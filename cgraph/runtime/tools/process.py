"""One tool worker process, seen from the session: spawn it, send it requests, wait for
its replies with a deadline, kill it.

The worker (`cgraph.runtime.tools.worker`) is a new interpreter (`sys.executable`, never a
fork: the session has threads), in its own process group so that Ctrl-C at the terminal
reaches the session only; a kill takes whatever the handler started with it, even what
left the group (`cgraph.runtime.tools.contain`).
It gets the session's Python path, so handlers import as they would here; what the
session allows them to come from travels in each request (`cgraph.runtime.tools.worker`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any

from cgraph.errors import ToolError
from cgraph.runtime.tools.contain import MARK, kill_all

STARTUP_LIMIT = 60.0
"""Seconds a new worker may take to start, and a handler's module to import; neither is
counted in the tool's timeout."""
_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from cgraph.runtime.tools.worker import serve; serve()"
)


class WorkerGone(Exception):
    """The worker stopped without answering; `why` is how ("killed by signal SIGSEGV")."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class Worker:
    """A running tool worker; one call at a time."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        """The mark in the environment of the worker and of whatever it starts."""
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(search_path())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, MARK: self.token},
            )
        except OSError as err:  # no processes or files left
            raise ToolError(f"cannot start the tool worker: {err}") from err
        self._pending = b""
        self._ready = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, request: Mapping[str, Any]) -> None:
        """Queue a request (the worker reads it once it has started); `WorkerGone` when
        it died."""
        line = json.dumps(dict(request), ensure_ascii=False, allow_nan=False).encode() + b"\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except OSError as err:  # the worker is gone: its end of the pipe closed
            raise WorkerGone(self._death()) from err

    def receive(self, seconds: float) -> dict[str, Any] | None:
        """The worker's next reply, or None when `seconds` passed first (a worker still
        starting gets `STARTUP_LIMIT` more); `WorkerGone` when it died."""
        if not self._ready:
            if self._line(time.monotonic() + STARTUP_LIMIT) is None:
                raise ToolError(f"the tool worker did not start within {STARTUP_LIMIT:g}s")
            self._ready = True
        reply = self._line(time.monotonic() + seconds)
        return None if reply is None else dict(json.loads(reply))

    def _line(self, deadline: float) -> bytes | None:
        """The next line the worker writes, or None at the deadline."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerGone(self._death())
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _death(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.stop()
            return "it closed its pipe and was stopped"
        return how_it_ended(code)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Kill the worker and everything it started, wherever it went (its own session,
        a double fork: `cgraph.runtime.tools.contain`); wait for it (no zombie is left)."""
        # Not reaped yet, the worker's id is still its own: its tree may be walked.
        kill_all(self.token, self.pid if self.process.poll() is None else None)
        if self.process.poll() is None:
            # ProcessLookupError: it ended between the poll and the kill.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a write the dead worker never read
                    pipe.close()


def how_it_ended(code: int) -> str:
    """A return code in words: "killed by signal SIGSEGV", "exited with status 3"."""
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def search_path() -> list[str]:
    """This process's Python path, the working folder written out (the worker's own
    working folder is the same, but an empty entry would be read relative to `-c`)."""
    here = os.getcwd()
    return [entry or here for entry in sys.path]
