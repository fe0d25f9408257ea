"""A provider's exception → what it means for cgraph, and the line of it that says why.

The meanings: `transient` (retry after a wait), `rejected` (the server refused how the
schema was sent: try the next structured-output mode), `system` (the chat template allows
only a leading system message), `permanent` (asking again cannot help), `timeout`, and
`unreachable`: the connection was refused before any answer (nobody listens at the
server's address), which no wait fixes within a turn.
"""

from __future__ import annotations

import ast
import errno
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Meaning = Literal["transient", "rejected", "system", "permanent", "timeout", "unreachable"]

TRANSIENT = frozenset(
    {
        "RateLimitError",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    }
)
PERMANENT = frozenset(
    {
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "BadRequestError",
        "UnprocessableEntityError",
        "ContextWindowExceededError",
        "ContentPolicyViolationError",
        "UnsupportedParamsError",
        "ImportError",
    }
)
# Words a server uses when it refuses the way the answer's schema was sent.
_MODE_WORDS = re.compile(r"response_format|json_schema|json schema|tool|grammar|schema", re.I)
_SYSTEM_WORDS = re.compile(r"system (message|prompt|role)|role.{0,20}system", re.I)
_PREFIX = re.compile(r"^(litellm\.\w+:\s*)?(\w+Exception\s*-\s*)?(Error code:\s*\d+\s*-\s*)?", re.I)
_HEADER = re.compile(r"^\d+ validation errors? for\b|:$", re.I)


@dataclass(frozen=True, slots=True)
class Failure:
    """What one failed call means, and its cause in one line."""

    meaning: Meaning
    cause: str
    status: int | None
    url: str | None = None
    """The address the request went to, when the error says (a refused connection)."""


def classify(err: BaseException) -> Failure:
    """The meaning of `err`, raised by `litellm.completion`."""
    if _refused(err):  # litellm words it "InternalServerError ... Connection error."
        return Failure("unreachable", "connection refused", None, _url(err))
    names = {cls.__name__ for cls in type(err).__mro__}
    status = getattr(err, "status_code", None)
    status = status if isinstance(status, int) else None
    text = cause(err)
    refused = status is not None and 400 <= status < 600 and status not in (408, 429)
    if "Timeout" in " ".join(names) or status == 408:
        return Failure("timeout", text, status)
    if refused and _SYSTEM_WORDS.search(text):
        return Failure("system", text, status)
    if refused and _MODE_WORDS.search(text):
        return Failure("rejected", text, status)
    if names & TRANSIENT or (status is not None and (status >= 500 or status == 429)):
        return Failure("transient", text, status)
    return Failure("permanent", text, status)


def cause(err: BaseException) -> str:
    """The line of a provider's error that says what was wrong."""
    text = str(getattr(err, "message", "") or err).strip()
    text = _PREFIX.sub("", text).strip()
    inner = _embedded_message(text)
    if inner:
        text = inner
    return _telling_line(text) or type(err).__name__


def _embedded_message(text: str) -> str | None:
    """`{"error": {"message": ...}}` inside the text, as JSON or as a Python repr."""
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    for parse in (json.loads, ast.literal_eval):
        try:
            data: Any = parse(body)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            continue
        found = _message_in(data)
        if found:
            return found
    return None


def _message_in(data: Any) -> str | None:
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return value
            nested = _message_in(value)
            if nested:
                return nested
    if isinstance(data, list) and data:
        return _message_in(data[0])
    return None


def _pydantic_detail(line: str) -> str | None:
    """`{'loc': ('body', 'response_format', 'type'), 'msg': ..., 'input': ...}` (a FastAPI
    server's validation error, as llama-cpp-python sends it) → `response_format.type: msg`."""
    if not line.startswith("{"):
        return None
    try:
        data = ast.literal_eval(line)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    if not isinstance(data, dict) or "msg" not in data:
        return None
    loc = [str(part) for part in data.get("loc", ()) if part != "body"]
    given = f" (got {data['input']!r})" if isinstance(data.get("input"), str) else ""
    return f"{'.'.join(loc)}: {data['msg']}{given}".lstrip(": ")[:300]


def _telling_line(text: str) -> str:
    """Skip headers such as "1 validation error for X" or "Errors:"; join a pydantic
    location with the message under it (`response_format.type: Input should be ...`)."""
    lines = [line for line in text.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if _HEADER.search(line.strip()):
            continue
        detail = _pydantic_detail(line.strip())
        if detail:
            return detail
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if following.startswith((" ", "\t")) and not line.startswith((" ", "\t")):
            return f"{line.strip()}: {following.strip()}"[:300]
        return line.strip()[:300]
    return lines[0].strip()[:300] if lines else ""


def _chain(err: BaseException) -> list[BaseException]:
    """`err` and the exceptions it was raised from, innermost last (at most 20)."""
    found: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in found and len(found) < 20:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _refused(err: BaseException) -> bool:
    """Whether the connection was refused: nobody listens at the address."""
    return any(
        isinstance(inner, ConnectionRefusedError)
        or (isinstance(inner, OSError) and inner.errno == errno.ECONNREFUSED)
        for inner in _chain(err)
    )


def _url(err: BaseException) -> str | None:
    """The URL an HTTP client's error holds (httpx keeps the request it failed on; the
    provider clients' own errors carry a placeholder request, so only httpx's counts)."""
    for inner in _chain(err):
        if not type(inner).__module__.startswith("httpx"):
            continue
        try:
            url = inner.request.url  # type: ignore[attr-defined]
        except Exception:  # httpx raises when an error has no request
            continue
        if url:
            return str(url)
    return None
