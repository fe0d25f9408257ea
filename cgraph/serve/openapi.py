"""The OpenAPI description of `cgraph serve`, built from the same table as its routes
(`cgraph.serve.app.ROUTES`): an endpoint is described where it is declared."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cgraph.serve.problems import Problem
from cgraph.spec.limits import MAX_MESSAGE_CHARS
from cgraph.version import __version__

CREATE: dict[str, Any] = {
    "type": "object",
    "required": ["graph"],
    "properties": {
        "graph": {"type": "string", "description": "A served graph's `name` (GET /v1/graphs)."},
        "session_id": {
            "type": "string",
            "pattern": "^[A-Za-z0-9._-]{1,64}$",
            "description": "The new session's id (default: a random one).",
        },
    },
}
MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "maxLength": MAX_MESSAGE_CHARS},
        "key": {
            "type": ["string", "integer"],
            "description": "Idempotency key: sent again, the first turn is returned "
            '(`"replayed": true`), never a second turn.',
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
            "description": "The conversation; the last is the `user` message of this turn.",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"type": "string"}, "content": {}},
            },
        },
        "stream": {"type": "boolean", "description": "`chat.completion.chunk` events."},
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


def document(routes: tuple[Endpoint, ...]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "cgraph serve", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": {"Error": ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def _operation(route: Endpoint) -> dict[str, Any]:
    kind = "text/event-stream" if route.streams else route.returns
    described = "events `delta`, `retracted`, `tools`, then one `turn`" if route.streams else "OK"
    ok: dict[str, Any] = {"description": described}
    if route.status < 300 and route.status != 204:  # a redirect or no content has no body
        ok["content"] = {kind: {}}
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    operation: dict[str, Any] = {
        "summary": route.summary,
        "operationId": route.handler.__name__,
        "responses": {str(route.status): ok, "4XX": {"description": "refused", **error}},
    }
    parameters = []
    if "{id}" in route.path:
        parameters.append(
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
        )
    if route.paged:
        for name, text in (("after", "events with a seq above this"), ("limit", "at most (1000)")):
            parameters.append(
                {"name": name, "in": "query", "description": text, "schema": {"type": "integer"}}
            )
    if parameters:
        operation["parameters"] = parameters
    if route.request is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": route.request}},
        }
    if route.public:
        operation["security"] = []
    return operation
