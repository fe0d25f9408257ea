"""The HTTP API's tables, generated from the server's own tables.

`cgraph/serve/app.py`'s `ROUTES` (which also builds the routes and `/openapi.json`) gives
every endpoint, its request body's fields and whether it needs a token;
`cgraph/serve/problems.py`'s `STATUS` gives the library error → status mapping. The
serving guide includes them as `{{ http.routes }}` and `{{ http.errors }}`.
"""

from __future__ import annotations

from typing import Any

from cgraph.serve.app import ROUTES
from cgraph.serve.problems import STATUS


def routes() -> str:
    lines = ["| endpoint | does | body | token |", "|---|---|---|---|"]
    for route in ROUTES:
        body = _fields(route.request) if route.request else ""
        streams = " (server-sent events)" if route.streams and "events" not in route.summary else ""
        paged = " (`?after=N&limit=M`)" if route.paged else ""
        token = "no" if route.public else "yes"
        answer = f" → {route.status}" if route.status != 200 else ""
        does = f"{route.summary}{streams}{paged}{answer}"
        lines.append(f"| `{route.method} {route.path}` | {does} | {body} | {token} |")
    return "\n".join(lines)


def errors() -> str:
    lines = ["| library error | status | code |", "|---|---|---|"]
    for kind, status, code in STATUS:
        lines.append(f"| `{kind.__name__}` | {status} | `{code}` |")
    lines.append("| any other | 500 | `internal` |")
    return "\n".join(lines)


def _fields(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", ()))
    names = [f"`{n}`" if n in required else f"`{n}`?" for n in schema.get("properties", {})]
    return "{" + ", ".join(names) + "}"
