"""The HTTP layer of `cgraph serve`: Starlette routes that turn a request into one call of
the `Service` (awaited when it writes to a session, a short read in a worker thread) and
its answer or error into JSON.

One table (`ROUTES`) names every endpoint; the app and its OpenAPI description
(`/openapi.json`) are both built from it. Every request passes the same gate (`_gate`):
503 while the server drains, the bearer token, then the body read within its limit; every
failure is `{"error": {"code", "message"}}` (`cgraph.serve.problems`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from cgraph.serve import chat, openapi
from cgraph.serve.bridge import awaited_bridge
from cgraph.serve.edge import Edge, Rules
from cgraph.serve.ids import LOCAL_USER
from cgraph.serve.limits import (
    MAX_BODY_BYTES,
    message,
    parsed,
    path_id,
    query_integer,
    session_id,
    text_field,
    too_large,
)
from cgraph.serve.metrics import CONTENT_TYPE
from cgraph.serve.openapi import MAX_SEQ
from cgraph.serve.options import ServeOptions, digest, read_tokens
from cgraph.serve.problems import Problem, body, problem_of
from cgraph.serve.reporting import reporting
from cgraph.serve.service import Service
from cgraph.serve.watch import Answered
from cgraph.spec.limits import MAX_GRAPH_NAME_CHARS

DRAIN_SECONDS = 30.0
"""Longest a SIGTERM waits for the turns in flight before the process stops anyway."""
Handler = Callable[["Call"], Awaitable[Response]]


@dataclass
class Call:
    """One request as a handler sees it: who asks, what for, and the service."""

    request: Request
    user: str
    data: dict[str, Any]
    service: Service
    gate: Gate

    @property
    def sid(self) -> str:
        return str(self.request.path_params.get("id", ""))

    async def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """`function(*args)` in a worker thread (the whole call on one thread)."""
        return await anyio.to_thread.run_sync(partial(function, *args), limiter=self.gate.limiter)

    def started(self, task: asyncio.Future[None]) -> None:
        """Count `task` (a streamed turn in its thread) in flight until it is done."""
        self.gate.started(task)


@dataclass
class Gate:
    """What every request passes: draining, the token, the body's size."""

    tokens: dict[str, str] | None
    limiter: anyio.CapacityLimiter
    draining: bool = False
    in_flight: int = 0
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    tasks: set[asyncio.Future[None]] = field(default_factory=set, repr=False)
    """Streamed turns running in their threads (kept so none is collected midway)."""
    home: str = "/openapi.json"
    """Where `GET /` sends a visitor: the studio when it is served, else this description."""

    def started(self, task: asyncio.Future[None]) -> None:
        """Count `task` in flight until it is done."""
        self.in_flight += 1
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[None]) -> None:
        self.in_flight -= 1
        self.tasks.discard(task)

    def user(self, request: Request) -> str:
        if self.tokens is None:
            return LOCAL_USER
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        user = self.tokens.get(digest(token.strip())) if scheme.lower() == "bearer" else None
        if user is None:
            raise Problem(
                401,
                "unauthorized",
                "send Authorization: Bearer TOKEN",
                (("www-authenticate", "Bearer"),),
            )
        return user


def answer(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def failed(problem: Problem, shape: Callable[[Problem], Any] = body) -> JSONResponse:
    return JSONResponse(shape(problem), status_code=problem.status, headers=dict(problem.headers))


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large(int(declared))
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise too_large(size)
            chunks.append(chunk)
    except ClientDisconnect:  # the client's doing, not a server error: nothing to log
        raise Problem(400, "client_disconnected", "the client left before its body ended") from None
    return b"".join(chunks)


# ----- the endpoints ----------------------------------------------------------------------


async def create(call: Call) -> Response:
    graph = str(text_field(call.data, "graph", limit=MAX_GRAPH_NAME_CHARS, schema=openapi.CREATE))
    chosen = session_id(text_field(call.data, "session_id", limit=64, required=False))
    return answer(await call.service.acreate(call.user, graph, chosen), 201)


async def send(call: Call) -> Response:
    """The turn on the event loop (`Service.asend`): no thread waits on the model."""
    text, key = message(call.data)
    return answer(await call.service.asend(call.user, call.sid, text, key))


async def stream(call: Call) -> Response:
    """Server-sent events. The turn runs in a task on the event loop that hands each piece
    over; the response starts once the session is open, so a refusal (404, 409) is still a
    status. A client that goes away does not stop the turn: it is committed, and its key
    finds it."""
    text, key = message(call.data)
    work = partial(call.service.astream, call.user, call.sid, text, key)
    pieces = await awaited_bridge(call, work)
    first = await anext(pieces)
    if first[0] == "failed":
        return failed(problem_of(first[1]["error"], call.sid))

    async def events() -> AsyncIterator[bytes]:
        async for kind, data in pieces:
            if kind == "failed":
                yield _event("error", body(problem_of(data["error"], call.sid)))
            else:
                yield _event(kind, data)

    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


def _event(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def view(call: Call) -> Response:
    return answer(await call.run(call.service.view, call.user, call.sid))


async def events(call: Call) -> Response:
    query = call.request.query_params
    after = query_integer(query.get("after"), -1, "after", -1, MAX_SEQ)
    limit = query_integer(query.get("limit"), 100, "limit", 1, MAX_SEQ)
    return answer(await call.run(call.service.events, call.user, call.sid, after, limit))


async def undo(call: Call) -> Response:
    return answer(await call.service.aundo(call.user, call.sid))


async def delete(call: Call) -> Response:
    await call.service.adelete(call.user, call.sid)
    return Response(status_code=204)


async def sessions(call: Call) -> Response:
    return answer(await call.run(call.service.sessions, call.user))


async def memories(call: Call) -> Response:
    return answer(await call.run(call.service.memories_of, call.user))


async def forget_all(call: Call) -> Response:
    return answer(await call.run(call.service.forget, call.user, None))


async def forget_one(call: Call) -> Response:
    return answer(await call.run(call.service.forget, call.user, call.sid))


async def graphs(call: Call) -> Response:
    return answer(call.service.graphs())


async def healthz(call: Call) -> Response:
    return answer({"ok": True})


async def readyz(call: Call) -> Response:
    try:
        return answer(await call.run(call.service.ready))
    except Exception as error:
        problem = problem_of(error)
        return failed(Problem(503, "not_ready", problem.message))


async def described(call: Call) -> Response:
    served = openapi.Served(tuple(sorted(call.service.served)), call.gate.tokens is not None)
    return answer(openapi.document(ROUTES, served))


async def deliveries(call: Call) -> Response:
    hooks = call.service.watch.webhooks
    if hooks is None:
        raise Problem(404, "no_webhooks", "this server sends no webhooks (give --webhook URL)")
    query = call.request.query_params
    status = query.get("status")
    if status not in (None, "pending", "delivered", "failed"):
        raise Problem(422, "invalid_field", "`status` is pending, delivered or failed")
    limit = min(max(query_integer(query.get("limit"), 100, "limit", -MAX_SEQ, MAX_SEQ), 1), 1000)
    return answer(await call.run(hooks.listed, call.user, status, limit))


async def home(call: Call) -> Response:
    return RedirectResponse(call.gate.home, status_code=307)


async def metrics(call: Call) -> Response:
    counted, wanted = call.service.watch.metrics, call.service.options.metrics_token
    if counted is None:
        raise Problem(404, "metrics_off", "metrics are off (the server runs with --no-metrics)")
    if wanted is not None:
        scheme, _, token = call.request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), wanted):
            raise Problem(
                401,
                "unauthorized",
                "send Authorization: Bearer METRICS_TOKEN (--metrics-token)",
                (("www-authenticate", "Bearer"),),
            )
    return Response(counted.text(), media_type=CONTENT_TYPE)


ROUTES: tuple[openapi.Endpoint, ...] = (
    openapi.Endpoint(
        "POST",
        "/v1/sessions",
        create,
        "Start a session",
        openapi.CREATE,
        201,
        refusals=(409, 429, 502),
    ),
    openapi.Endpoint("GET", "/v1/sessions", sessions, "The caller's sessions"),
    openapi.Endpoint("GET", "/v1/sessions/{id}", view, "A session: state, variables, transcript"),
    openapi.Endpoint(
        "DELETE",
        "/v1/sessions/{id}",
        delete,
        "Forget a session: its events, checkpoints and task memories",
        status=204,
        refusals=(409,),
    ),
    openapi.Endpoint(
        "POST",
        "/v1/sessions/{id}/messages",
        send,
        "Send a message",
        openapi.MESSAGE,
        refusals=(409, 429, 502),
    ),
    openapi.Endpoint(
        "POST",
        "/v1/sessions/{id}/messages:stream",
        stream,
        "Send a message; the reply as server-sent events",
        openapi.MESSAGE,
        streams=True,
        refusals=(409, 429, 502),
    ),
    openapi.Endpoint("GET", "/v1/sessions/{id}/events", events, "The audit log, paged", paged=True),
    openapi.Endpoint(
        "POST", "/v1/sessions/{id}/undo", undo, "Take back the last turn", refusals=(409, 429)
    ),
    openapi.Endpoint("GET", "/v1/memories", memories, "The caller's memories"),
    openapi.Endpoint("DELETE", "/v1/memories", forget_all, "Forget all the caller's memories"),
    openapi.Endpoint("DELETE", "/v1/memories/{id}", forget_one, "Forget one memory"),
    openapi.Endpoint("GET", "/v1/graphs", graphs, "The served graphs"),
    openapi.Endpoint("GET", "/healthz", healthz, "The process is up", public=True),
    openapi.Endpoint("GET", "/readyz", readyz, "Store and memory reachable", public=True),
    openapi.Endpoint("GET", "/openapi.json", described, "This description"),
    openapi.Endpoint(
        "GET",
        "/metrics",
        metrics,
        "Prometheus metrics (no API token; `--metrics-token` sets one of their own)",
        public=True,
        returns="text/plain",
    ),
    openapi.Endpoint(
        "GET",
        "/v1/webhooks/deliveries",
        deliveries,
        "The caller's webhook deliveries, latest first (`?status=failed`, `?limit=`)",
        refusals=(404, 422),
    ),
    openapi.Endpoint("GET", "/v1/models", chat.models, "The served graphs, as OpenAI models"),
    openapi.Endpoint(
        "POST",
        "/v1/chat/completions",
        chat.completions,
        "OpenAI's chat completions: `model` is a graph, the conversation a session",
        openapi.CHAT,
        errors=chat.openai_error,
        refusals=(404, 409, 429, 502),
    ),
    openapi.Endpoint(
        "GET", "/", home, "Redirects to the studio, or to this description", status=307, public=True
    ),
)


def _gated(
    endpoint: openapi.Endpoint, service: Service, gate: Gate
) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        with service.watch.request(request, endpoint.path) as answered:
            response = await _answered(request, answered)
            answered.status = response.status_code
            response.headers["x-request-id"] = answered.request_id
            return response

    shape = endpoint.errors or body

    async def _answered(request: Request, answered: Answered) -> Response:
        if gate.draining:
            return failed(Problem(503, "draining", "the server is stopping; try another"), shape)
        # Concurrency is bounded here, by what a process carries, not by its threads; only
        # writes count, so a client polling a session never pushes a message out.
        writes = request.method == "POST"
        if writes and gate.in_flight >= service.options.max_in_flight:
            limit = service.options.max_in_flight
            busy = f"over {limit} requests in flight here; try again in a second"
            return failed(Problem(503, "overloaded", busy, (("retry-after", "1"),)), shape)
        gate.in_flight += writes
        answered.session = request.path_params.get("id")
        try:
            user = LOCAL_USER if endpoint.public else gate.user(request)
            path_id(str(request.path_params.get("id", "")))
            answered.user = None if endpoint.public else user
            data = parsed(await _body(request)) if request.method == "POST" else {}
            response: Response = await endpoint.handler(Call(request, user, data, service, gate))
            return response
        except Exception as error:
            problem = problem_of(error, str(request.path_params.get("id", "")))
            answered.error_id = problem.error_id
            return failed(problem, shape)
        finally:
            gate.in_flight -= writes

    return handle


def _by_path(endpoints: tuple[openapi.Endpoint, ...], service: Service, gate: Gate) -> list[Route]:
    """One route per path, answering each of its methods (any other is a 405 whose `Allow`
    names them all)."""
    handlers: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {}
    for e in endpoints:
        handlers.setdefault(e.path, {})[e.method] = _gated(e, service, gate)

    def dispatch(
        methods: dict[str, Callable[[Request], Awaitable[Response]]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            method = "GET" if request.method == "HEAD" else request.method
            return await methods[method](request)

        return handle

    return [Route(path, dispatch(m), methods=list(m)) for path, m in handlers.items()]


def build(
    service: Service, tokens_file: str | None = None, extra: tuple[openapi.Endpoint, ...] = ()
) -> Starlette:
    """The app serving `service` (with `tokens_file`'s users, else the one `local`), and
    the `extra` endpoints behind the same gate (the studio's; not in `/openapi.json`)."""
    tokens = read_tokens(Path(tokens_file)) if tokens_file else None
    gate = Gate(tokens, anyio.CapacityLimiter(service.options.threads))
    gate.home = next((e.path for e in extra if e.path.startswith("/studio")), "/openapi.json")
    service.watch = reporting(service.options, service.store)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        gate.loop = asyncio.get_running_loop()
        service.serve_on(gate.loop)
        _drain_on_sigterm(gate)
        yield
        service.watch.close()
        await service.stopped()

    async def not_found(request: Request, error: Exception) -> Response:
        with service.watch.request(request, "(no route)") as answered:
            answered.status = status = getattr(error, "status_code", 500)
            if status == 405 and isinstance(error, HTTPException):
                allowed = (error.headers or {}).get("Allow", "")
                said = f"{request.method} {request.url.path}: this endpoint takes {allowed}"
                return failed(Problem(405, "method_not_allowed", said, (("allow", allowed),)))
            code = {404: "no_route"}.get(status, "bad_request")
            return failed(
                Problem(status, code, f"{request.method} {request.url.path}: no such endpoint")
            )

    routes = _by_path((*ROUTES, *extra), service, gate)
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: not_found},
        middleware=_edge(service.options),
    )
    app.router.redirect_slashes = False  # a path with a slash more is no endpoint: 404
    return app


def _edge(options: ServeOptions) -> list[Middleware]:
    """The checks before any route (`cgraph.serve.edge`); CORS for the allowed origins."""
    edge = [Middleware(Edge, rules=Rules.of(options))]
    if not options.allow_origins:
        return edge
    cors = Middleware(
        CORSMiddleware,
        allow_origins=list(options.allow_origins),
        allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["authorization", "content-type"],
        max_age=600,
    )
    return [cors, *edge]


def _drain_on_sigterm(gate: Gate) -> None:
    """SIGTERM: answer new requests 503 at once, let the turns in flight finish (at most
    `DRAIN_SECONDS`), then hand the signal to the server's own handler, which stops."""
    if threading.current_thread() is not threading.main_thread() or gate.loop is None:
        return
    loop, previous = gate.loop, signal.getsignal(signal.SIGTERM)

    async def drained(number: int) -> None:
        deadline = time.monotonic() + DRAIN_SECONDS
        while gate.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if callable(previous):
            previous(number, None)

    def drain(number: int) -> None:
        gate.tasks.add(loop.create_task(drained(number)))

    def on_sigterm(number: int, frame: object) -> None:
        if not gate.draining:
            gate.draining = True
            loop.call_soon_threadsafe(drain, number)

    signal.signal(signal.SIGTERM, on_sigterm)
