"""What a request must say about itself before any endpoint sees it, so that no web page
can drive the server through a visitor's browser: a body is `application/json` (a page's
"simple" `text/plain` or form POST, sent without a preflight, is refused), a write from
a foreign `Origin` is refused (`--allow-origin` names a real front end, which also gets
CORS), and a server on loopback without tokens answers only to its own names in `Host`
(a DNS-rebound name reaches the port but not the data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from cgraph.serve.options import LOOPBACK, ServeOptions
from cgraph.serve.problems import Problem, body

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON_TYPES = frozenset({"application/json"})

Scope = dict[str, Any]
ASGI = Any


@dataclass(frozen=True)
class Rules:
    """The names the server answers to and the origins that may write to it."""

    hosts: frozenset[str] | None
    """Host names accepted, whatever the port (None: any; a server with tokens or not on
    loopback). A rebound name reaches the same port, so the name is what tells."""
    origins: frozenset[str]
    """Origins besides the server's own that may write (`--allow-origin`)."""

    @classmethod
    def of(cls, options: ServeOptions) -> Rules:
        hosts = None
        if options.tokens is None and options.host in LOOPBACK:
            hosts = frozenset(("127.0.0.1", "localhost", "[::1]"))
        return cls(hosts, frozenset(o.rstrip("/") for o in options.allow_origins))

    def refusal(self, method: str, scheme: str, headers: Headers) -> Problem | None:
        """Why the request must not reach an endpoint, or None."""
        host = headers.get("host", "")
        if self.hosts is not None and _name(host) not in self.hosts:
            return Problem(
                421,
                "unknown_host",
                f"this server answers to {', '.join(sorted(self.hosts))}, not `Host: {host}`",
            )
        if method not in WRITES:
            return None
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins and origin != f"{scheme}://{host}":
            return Problem(
                403,
                "foreign_origin",
                f"a write from origin `{origin}` is refused; serve it with --allow-origin {origin}",
            )
        if _has_body(headers) and _media_type(headers) not in JSON_TYPES:
            return Problem(
                415,
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`",
            )
        return None


def _name(host: str) -> str:
    """`Host`'s name without its port (`[::1]:8000` is `[::1]`)."""
    name, colon, port = host.lower().rpartition(":")
    return name if colon and port.isdigit() and not name.endswith(":") else host.lower()


def _has_body(headers: Headers) -> bool:
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def _media_type(headers: Headers) -> str:
    return headers.get("content-type", "").partition(";")[0].strip().lower()


class Edge:
    """The ASGI middleware that applies `Rules` to every HTTP request."""

    def __init__(self, app: ASGI, rules: Rules) -> None:
        self.app, self.rules = app, rules

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            problem = self.rules.refusal(scope["method"], scope.get("scheme", "http"), headers)
            if problem is not None:
                refused = JSONResponse(body(problem), status_code=problem.status)
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)
