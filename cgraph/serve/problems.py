"""What a client is told when a request fails: one table from the library's errors to an
HTTP status and a code, and the one JSON shape `{"error": {"code", "message"}}`.

The first row whose class the error is an instance of answers (subclasses first). A
session that belongs to another user answers exactly as a missing one does. An error the
table does not place, or a 5xx, never shows its text: the client gets an error id, and the
server's log line (with the traceback) carries the same id.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from cgraph.errors import (
    CgraphError,
    ConfigError,
    InputError,
    LeaseLost,
    LLMError,
    MemoryStoreError,
    NotTheOwner,
    SessionBusy,
    SessionCompleted,
    SessionError,
    SessionExists,
    SessionNotFound,
    SessionQuota,
    StoreError,
    ToolError,
    ValueTooLarge,
)

LOG = logging.getLogger("cgraph.serve")


@dataclass
class Problem(Exception):
    """A request refused by the server itself (a limit, a bad body, no token). Not frozen:
    an exception's traceback is set on it on its way out of a `with` block."""

    status: int
    code: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()
    error_id: str | None = None
    """The id a 5xx's client is given, which the server's log lines carry too."""


STATUS: tuple[tuple[type[CgraphError], int, str], ...] = (
    (NotTheOwner, 404, "not_found"),
    (SessionNotFound, 404, "not_found"),
    (SessionBusy, 409, "session_busy"),
    (LeaseLost, 409, "lease_lost"),
    (SessionCompleted, 409, "session_completed"),
    (SessionExists, 409, "session_exists"),
    (SessionQuota, 403, "session_quota"),
    (SessionError, 409, "session_conflict"),
    (ValueTooLarge, 422, "value_too_large"),
    (InputError, 422, "invalid_field"),
    (ConfigError, 422, "not_servable"),
    (StoreError, 503, "store_unavailable"),
    (MemoryStoreError, 503, "memory_unavailable"),
    (LLMError, 502, "model_failed"),
    (ToolError, 502, "tool_failed"),
)
"""Library error → (status, code). Anything else is a 500."""


def not_found(session_id: str) -> Problem:
    """The one answer for a session that is missing or someone else's."""
    return Problem(404, "not_found", f"no session `{session_id}`")


def problem_of(error: BaseException, session_id: str | None = None) -> Problem:
    """The answer for `error`; a 5xx is logged with the id the client is given."""
    if isinstance(error, Problem):
        return error
    for kind, status, code in STATUS:
        if isinstance(error, kind):
            if status == 404:
                return not_found(session_id or "")
            if status < 500:
                return Problem(status, code, error.message)
            return _logged(error, status, code)
    return _logged(error, 500, "internal")


def _logged(error: BaseException, status: int, code: str) -> Problem:
    error_id = uuid.uuid4().hex[:16]
    fields = {"error_id": error_id, "status": status, "code": code}
    LOG.error("error %s: %s %s", error_id, status, code, exc_info=error, extra={"fields": fields})
    said = {
        "store_unavailable": "the session store is unavailable",
        "memory_unavailable": "the memory store is unavailable",
    }.get(code, "the model or a tool failed" if status == 502 else "the server failed")
    message = f"{said}; error id {error_id} (in the server's log)"
    return Problem(status, code, message, error_id=error_id)


def body(problem: Problem) -> dict[str, dict[str, str]]:
    return {"error": {"code": problem.code, "message": problem.message}}
