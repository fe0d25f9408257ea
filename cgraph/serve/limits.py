"""What a request may carry and how often, checked before anything is stored: the body's
size, its text (UTF-8 without lone surrogates), a message's length, a user's turns per
minute and sessions."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cgraph.serve.openapi import (
    ID_PATTERN,
    MAX_KEY_CHARS,
    MAX_SEQ,
    MAX_STORED_ID_CHARS,
    MESSAGE,
)
from cgraph.serve.problems import Problem, not_found
from cgraph.spec.limits import MAX_MESSAGE_CHARS

MAX_BODY_BYTES = 64 * 1024
MAX_ID_CHARS = 64


def too_large(size: int) -> Problem:
    return Problem(413, "body_too_large", f"the body is over {MAX_BODY_BYTES:,} bytes")


def parsed(raw: bytes) -> dict[str, Any]:
    """A request's JSON object; `Problem` 400 for anything else (an empty body is `{}`)."""
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Problem(400, "invalid_utf8", f"the body is not UTF-8 (byte {err.start})") from None
    try:
        data = json.loads(text)
    except ValueError as err:
        raise Problem(400, "invalid_json", f"the body is not JSON: {err}") from None
    except RecursionError:
        raise Problem(400, "invalid_json", "the body's JSON is nested too deep") from None
    if not isinstance(data, dict):
        raise Problem(400, "invalid_json", "the body must be a JSON object")
    try:  # "\ud800" in JSON decodes to a lone surrogate, which no UTF-8 text holds
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise Problem(
            400, "invalid_utf8", "the body holds a lone surrogate (\\ud800-\\udfff)"
        ) from None
    return data


def text_field(
    data: dict[str, Any],
    name: str,
    *,
    limit: int,
    required: bool = True,
    schema: dict[str, Any] | None = None,
) -> str | None:
    """A string field; `Problem` 422 when missing (if required: the body's `schema` names
    the fields it takes), not a string or too long."""
    value = data.get(name)
    if value is None and not required:
        return None
    if name not in data:
        raise Problem(422, "missing_field", f"`{name}` is missing{_fields(schema)}")
    if not isinstance(value, str):
        raise Problem(422, "invalid_field", f"`{name}` must be a string")
    if len(value) > limit:
        code = "message_too_long" if name == "text" else "invalid_field"
        raise Problem(422, code, f"`{name}` is over {limit:,} characters")
    nul = value.find("\x00")
    if nul >= 0:  # no store keeps one (PostgreSQL text cannot)
        raise Problem(422, "invalid_field", f"`{name}` holds a NUL character at {nul + 1}")
    return value


def _fields(schema: dict[str, Any] | None) -> str:
    """ "; the body takes `graph` (required), `session_id`", from a body's schema."""
    if not schema:
        return ""
    required = set(schema.get("required", ()))
    named = (f"`{n}`" + (" (required)" if n in required else "") for n in schema["properties"])
    return f"; the body takes {', '.join(named)}"


def message(data: dict[str, Any]) -> tuple[str, str | None]:
    """(text, idempotency key) of a message body."""
    text = text_field(data, "text", limit=MAX_MESSAGE_CHARS, schema=MESSAGE)
    key = data.get("key")
    if isinstance(key, int) and not isinstance(key, bool):
        if not -MAX_SEQ - 1 <= key <= MAX_SEQ:
            raise Problem(422, "invalid_field", "an integer `key` must fit in 64 bits")
        key = str(key)
    key = text_field({"key": key}, "key", limit=MAX_KEY_CHARS, required=False)
    return str(text), key


def session_id(value: str | None) -> str | None:
    """A session id a client chose: a letter or digit, then letters, digits, `-`, `_`,
    `.`; at most 64."""
    if value is None:
        return None
    if re.fullmatch(ID_PATTERN, value) is None:
        raise Problem(
            422,
            "invalid_field",
            "`session_id` must be 1-64 letters, digits, `-`, `_` or `.`, "
            "starting with a letter or digit",
        )
    return value


def path_id(value: str) -> str:
    """An id in a URL path; one no session or memory can have (a NUL, too long) is the
    same 404 as a missing one, never a question to the store."""
    if len(value) > MAX_STORED_ID_CHARS or "\x00" in value:
        raise not_found(value[:MAX_ID_CHARS])
    return value


def query_integer(value: str | None, default: int, name: str, low: int, high: int) -> int:
    """An integer query parameter between `low` and `high`; `Problem` 422 otherwise."""
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise Problem(422, "invalid_field", f"`{name}` must be an integer") from None
    if not low <= number <= high:
        raise Problem(422, "invalid_field", f"`{name}` must be from {low} to {high}")
    return number


class Rate:
    """At most `per_minute` events per user in any 60 s (kept in this process)."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute, self.clock = per_minute, clock
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, user: str) -> None:
        """Count one for `user`; `Problem` 429 (nothing counted) when over the limit."""
        now = self.clock()
        with self._lock:
            seen = self._seen.setdefault(user, deque())
            while seen and seen[0] <= now - 60:
                seen.popleft()
            if len(seen) >= self.per_minute:
                wait = max(1, int(seen[0] + 60 - now) + 1)
                raise Problem(
                    429,
                    "rate_limited",
                    f"over {self.per_minute} turns a minute; try again in {wait} s",
                    (("retry-after", str(wait)),),
                )
            seen.append(now)

    @contextmanager
    def refunded(self, user: str, when: type[BaseException]) -> Iterator[None]:
        """Around what `user`'s last event was counted for: `when` raised in here uncounts
        it (what it was for was refused)."""
        try:
            yield
        except when:
            with self._lock:
                seen = self._seen.get(user)
                if seen:
                    seen.pop()
            raise
