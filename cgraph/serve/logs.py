"""The server's log: one structured line per request and per turn (`--log-format json` or
`text`), with the request id that ties a request's lines together and the error id a client
was given for a 5xx. No message text unless `--log-content` asks for it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextvars import ContextVar
from typing import Any

LOG = logging.getLogger("cgraph.serve")
REQUEST_ID: ContextVar[str] = ContextVar("cgraph_request_id", default="")
"""The id of the request being answered (its `X-Request-Id`), for every line it logs."""


class JsonLines(logging.Formatter):
    """A record as one JSON object: time, level, logger, message, the request id and the
    record's `fields`; a traceback as one more field."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = REQUEST_ID.get()
        if request:
            line["request_id"] = request
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class Text(logging.Formatter):
    """`time LEVEL logger: message key=value …` (values with spaces quoted)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", {}))
        request = REQUEST_ID.get()
        if request:
            fields.setdefault("request_id", request)
        pairs = " ".join(f"{k}={_word(v)}" for k, v in fields.items() if v is not None)
        head = super().format(record)
        if not pairs:
            return head
        first, newline, rest = head.partition("\n")  # a traceback stays below the line
        return f"{first} {pairs}{newline}{rest}"


def configure(form: str = "text") -> None:
    """Every logger of the process (uvicorn's too) writes to stderr in `form`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if form == "json" else Text())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for chatty in ("httpx", "httpcore"):  # a line per webhook sent is not the server's news
        logging.getLogger(chatty).setLevel(logging.WARNING)


def line(message: str, level: int = logging.INFO, **fields: Any) -> None:
    """One structured line (fields that are None are left out)."""
    if LOG.isEnabledFor(level):
        LOG.log(
            level, message, extra={"fields": {k: v for k, v in fields.items() if v is not None}}
        )


def _iso(created: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{whole}.{int(created % 1 * 1000):03d}Z"


def _word(value: Any) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if not text or " " in text or '"' in text else text
