"""The OpenAPI description of `cgraph serve`, built from the same table as its routes
(`cgraph.serve.app.ROUTES`): an endpoint is described where it is declared."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cgraph.serve.problems import Problem
from cgraph.spec.limits import MAX_MESSAGE_CHARS
from cgraph.version import __version__

MAX_KEY_CHARS = 200
MAX_SEQ = 2**63 - 1
"""The largest event number, and integer key, a store keeps (a signed 64-bit integer)."""
ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A session id a client may choose (no `.` or `..`, which no URL path reaches)."""
NO_NUL = "^[^\\u0000]*$"
"""Text a store can keep (PostgreSQL's cannot hold a NUL)."""
MAX_STORED_ID_CHARS = 200
"""The longest id `cgraph run --session` gives a session (any text without a NUL)."""

CREATE: dict[str, Any] = {
    "type": "object",
    "required": ["graph"],
    "properties": {
        "graph": {"type": "string", "description": "A served graph's `name` (GET /v1/graphs)."},
        "session_id": {
            "type": ["string", "null"],
            "pattern": ID_PATTERN,
            "description": "The new session's id (null or left out: a random one).",
        },
    },
}
MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "maxLength": MAX_MESSAGE_CHARS, "pattern": NO_NUL},
        "key": {
            "type": ["string", "integer", "null"],
            "maxLength": MAX_KEY_CHARS,
            "pattern": NO_NUL,
            "minimum": -MAX_SEQ - 1,
            "maximum": MAX_SEQ,
            "description": "Idempotency key: sent again with the same text, the first turn is "
            'returned (`"replayed": true`), never a second turn; with another text, 422 '
            "`key_reused`. Null: no key.",
        },
    },
}
CHAT: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "description": "A served graph's `name` (GET /v1/models)."},
        "messages": {
            "type": "array",
            "minItems": 1,
            "description": "The conversation; the last is the `user` message of this turn.",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"type": "string"}, "content": {}},
            },
        },
        "stream": {"type": "boolean", "description": "`chat.completion.chunk` events."},
        "stream_options": {
            "type": "object",
            "description": "`{include_usage: true}`: a last chunk carries the `usage`.",
            "properties": {"include_usage": {"type": "boolean"}},
        },
        "user": {
            "type": "string",
            "description": "Names the conversation (its session), unless X-Session-Id does.",
        },
    },
}
ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}


@dataclass(frozen=True)
class Endpoint:
    """One route: its method, path, handler and what the description says of it."""

    method: str
    path: str
    handler: Callable[[Any], Awaitable[Any]]
    summary: str
    request: dict[str, Any] | None = None
    status: int = 200
    streams: bool = False
    paged: bool = False
    public: bool = False
    """Answered without a token (a load balancer's health checks)."""
    returns: str = "application/json"
    """The media type of its answer."""
    errors: Callable[[Problem], dict[str, Any]] | None = None
    """How its refusals are written, when not as `{"error": {"code", "message"}}`."""
    refusals: tuple[int, ...] = ()
    """Statuses it may refuse with beyond those every request may get (409, 429, ...)."""


@dataclass(frozen=True)
class Served:
    """What of the server the description tells: the graphs' names, whether it wants
    tokens."""

    graphs: tuple[str, ...]
    tokens: bool


EVERY = (421, 500, 503)
"""What any request may get: an unknown `Host` (loopback without tokens), a failure,
draining."""
BODY = (400, 413, 415, 422)
"""What a request with a body may get: not JSON or cut short, too large, not JSON by its
`Content-Type`, a field refused."""
STATUS_WORDS = {
    400: "not JSON, or the client left midway",
    401: "no token, or an unknown one",
    403: "refused: a foreign origin, or over the session quota",
    404: "no such session or memory (or another user's)",
    409: "the session is busy, completed or taken",
    413: "the body is too large",
    415: "the body is not `application/json`",
    421: "not this server's name in `Host`",
    422: "a field or parameter refused",
    429: "over the rate of turns",
    500: "the server failed (an error id is in its log)",
    502: "the model or a tool failed",
    503: "the session or memory store is unavailable, or the server is stopping",
}


def document(routes: tuple[Endpoint, ...], served: Served | None = None) -> dict[str, Any]:
    """The description of `routes`, as this server answers them (`served`: its graphs
    as the only `graph` a create may name, its tokens as the security asked for)."""
    served = served or Served((), tokens=True)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, served)
    _link_sessions(paths)
    return {
        "openapi": "3.1.0",
        "info": {"title": "cgraph serve", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}] if served.tokens else [],
    }


def _link_sessions(paths: dict[str, dict[str, Any]]) -> None:
    """A created session's id links to every operation on `/v1/sessions/{id}...` (what a
    stateful client follows)."""
    created = paths.get("/v1/sessions", {}).get("post")
    if created is None:
        return
    links = {}
    for path, operations in paths.items():
        if not path.startswith("/v1/sessions/{id}"):
            continue
        for operation in operations.values():
            links[operation["operationId"]] = {
                "operationId": operation["operationId"],
                "parameters": {"id": "$response.body#/session"},
            }
    created["responses"]["201"]["links"] = links


def _statuses(route: Endpoint, served: Served) -> list[int]:
    statuses = set(EVERY) | set(route.refusals)
    if not route.public and served.tokens:
        statuses.add(401)
    if route.method in ("POST", "DELETE"):
        statuses |= {403, 404} if "{id}" in route.path else {403}
    if route.method == "POST":
        statuses |= set(BODY)
    if "{id}" in route.path:
        statuses |= {404, 422}
    if route.paged:
        statuses.add(422)
    return sorted(statuses)


def _operation(route: Endpoint, served: Served) -> dict[str, Any]:
    kind = "text/event-stream" if route.streams else route.returns
    described = "events `delta`, `retracted`, `tools`, then one `turn`" if route.streams else "OK"
    ok: dict[str, Any] = {"description": described}
    if route.status < 300 and route.status != 204:  # a redirect or no content has no body
        ok["content"] = {kind: {}}
    if route.status == 307:
        ok["headers"] = {"location": {"schema": {"type": "string"}, "required": True}}
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    responses = {str(route.status): ok}
    for status in _statuses(route, served):
        responses[str(status)] = {"description": STATUS_WORDS[status], **error}
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": route.handler.__name__,
        "responses": responses,
    }
    parameters = []
    if "{id}" in route.path:
        parameters.append({"name": "id", "in": "path", "required": True, "schema": PATH_ID})
    if route.paged:
        parameters += PAGED
    if parameters:
        operation["parameters"] = parameters
    if route.request is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _named(route.request, served)}},
        }
    if route.public or not served.tokens:
        operation["security"] = []
    return operation


PATH_ID: dict[str, Any] = {"type": "string", "maxLength": MAX_STORED_ID_CHARS, "pattern": NO_NUL}
PAGED: list[dict[str, Any]] = [
    {
        "name": "after",
        "in": "query",
        "description": "events with a seq above this (-1, the default: from the first)",
        "schema": {"type": "integer", "minimum": -1, "maximum": MAX_SEQ},
    },
    {
        "name": "limit",
        "in": "query",
        "description": "at most this many (100 by default; more than 1,000 gives 1,000)",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_SEQ},
    },
]


def _named(schema: dict[str, Any], served: Served) -> dict[str, Any]:
    """`schema` with its graph-naming field (`graph`, `model`) held to the served names."""
    if not served.graphs:
        return schema
    properties = dict(schema.get("properties", {}))
    for name in ("graph", "model"):
        if name in properties and name in schema.get("required", ()):
            properties[name] = {**properties[name], "enum": list(served.graphs)}
    return {**schema, "properties": properties}
