"""OpenAI's chat-completions protocol over the served graphs, for any chat front end: `model`
is a graph's name (`GET /v1/models`), and the conversation is a session — the one an
`X-Session-Id` header names, else one per (token's user, graph, `user` field), created on
first use. The last message is the turn's input; the user messages before it are checked
against the session's transcript, never replayed (a front end that sends a conversation
the session did not have is told so: 409). A request sent again after its turn was made
(the same conversation) gets that turn again, not a second one.

`usage` counts the tokens of every model call the request made (the turn's, its memory
extraction's, a summary's, the opening's of a session it started): the provider's counts
where it gave them, else cgraph's estimate (`ModelCall.usage`); a turn sent again, or one
no model answered (the offline chooser), made none and counts 0. A stream sends them in a
last chunk when asked (`stream_options: {"include_usage": true}`), as OpenAI does.

Errors are OpenAI-shaped (`{"error": {"message", "type", "param", "code"}}`), so the OpenAI
SDKs raise their own exceptions for them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from starlette.responses import JSONResponse, Response, StreamingResponse

from cgraph.errors import SessionNotFound
from cgraph.observe import ModelCall, watching
from cgraph.serve.bridge import Running, awaited_bridge
from cgraph.serve.graphs import unknown
from cgraph.serve.limits import session_id
from cgraph.serve.problems import Problem, problem_of
from cgraph.serve.service import Emit, Service
from cgraph.spec.limits import MAX_MESSAGE_CHARS

if TYPE_CHECKING:
    from starlette.requests import Request


class Call(Running, Protocol):
    """A request as the gate hands it over (`cgraph.serve.app.Call`)."""

    request: Request
    user: str
    data: dict[str, Any]
    service: Service


TYPES = {401: "invalid_request_error", 429: "rate_limit_error"}
"""OpenAI's error `type` by status (any other 4xx: `invalid_request_error`; 5xx: `server_error`)."""
CODES = {"unauthorized": "invalid_api_key", "unknown_graph": "model_not_found"}


def openai_error(problem: Problem) -> dict[str, Any]:
    """A refusal as OpenAI's clients read one."""
    kind = TYPES.get(problem.status) or (
        "server_error" if problem.status >= 500 else "invalid_request_error"
    )
    code = CODES.get(problem.code, problem.code)
    param = {"model_not_found": "model"}.get(code)
    return {"error": {"message": problem.message, "type": kind, "param": param, "code": code}}


@dataclass(frozen=True, slots=True)
class Asked:
    """A chat request as the service takes it."""

    graph: str
    session: str | None
    said: tuple[str, ...]
    """The user messages before the last, as the front end has the conversation."""
    text: str
    key: str


def asked(call: Call) -> Asked:
    """The request's graph, session, conversation and input; `Problem` 400/404 otherwise."""
    data, served = call.data, call.service.served
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise Problem(400, "missing_field", "`model` is missing: a graph's name (GET /v1/models)")
    if model not in served:
        raise Problem(404, "unknown_graph", unknown(model, served))
    turns = _messages(data.get("messages"))
    if not turns or turns[-1][0] != "user":
        raise Problem(400, "invalid_field", "`messages` must end with a `user` message")
    said = tuple(text for role, text in turns[:-1] if role == "user")
    text = turns[-1][1]
    if len(text) > MAX_MESSAGE_CHARS:
        raise Problem(
            400, "message_too_long", f"the message is over {MAX_MESSAGE_CHARS:,} characters"
        )
    named = call.request.headers.get("x-session-id")
    user = data.get("user")
    if named is not None:
        sid = session_id(named)
    elif isinstance(user, str) and user:
        sid = "chat-" + _digest(call.user, model, user)[:40]
    elif said:
        raise Problem(
            400,
            "no_session",
            "a conversation with earlier messages needs its session: send the `user` field "
            "or an X-Session-Id header (the same on every request of the conversation)",
        )
    else:
        sid = None
    key = "chat-" + _digest(*said, text)[:40]
    return Asked(model, sid, said, text, key)


def _messages(value: Any) -> list[tuple[str, str]]:
    """(role, text) of each message; content given as parts keeps its text parts."""
    if not isinstance(value, list):
        raise Problem(400, "invalid_field", "`messages` must be a list of {role, content}")
    found = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise Problem(400, "invalid_field", "each message must be {role, content}")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                str(p.get("text", ""))
                for p in content
                if isinstance(p, dict) and p.get("type") == "text"
            )
        if content is not None and not isinstance(content, str):
            raise Problem(400, "invalid_field", "a message's `content` must be text")
        found.append((message["role"], content or ""))
    return found


def _digest(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


async def converse(
    service: Service, user: str, request: Asked, emit: Emit | None = None
) -> dict[str, Any]:
    """The turn `request` asks for, on its session (started if new): the turn's JSON, with
    `opening`, the reply a graph that speaks first gave when this request started it.
    With `emit`, the turn is streamed (`Service.astream`'s events), then its `usage`.
    Awaited on the event loop as any turn is; only the read of the conversation runs in a
    thread."""
    calls: list[ModelCall] = []
    with watching(calls.append):
        turn = await _conversed(service, user, request, emit)
    turn["usage"] = usage(calls)
    if emit is not None:
        emit("usage", turn["usage"])
    return turn


def usage(calls: list[ModelCall]) -> dict[str, int]:
    """OpenAI's `usage` of `calls`."""
    counted = [call.usage() for call in calls]
    prompt, completion = sum(p for p, _ in counted), sum(c for _, c in counted)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


async def _conversed(
    service: Service, user: str, request: Asked, emit: Emit | None
) -> dict[str, Any]:
    sid, opening = request.session, None
    try:
        found = await service.aview(user, sid) if sid is not None else None
    except SessionNotFound:
        found = None
    if found is None:
        if request.said:
            raise Problem(
                409,
                "conversation_mismatch",
                f"no session `{sid}` holds this conversation's {len(request.said)} earlier "
                "message(s); start a new conversation",
            )
        started = await service.acreate(user, request.graph, sid)
        sid, opening = started["session"], (started.get("turn") or {}).get("reply") or None
        if emit is not None and opening:
            emit("delta", {"text": f"{opening}\n\n"})
    else:
        _check(found, request)
    assert sid is not None
    if emit is None:
        turn = await service.asend(user, sid, request.text, request.key)
    else:
        made: dict[str, Any] = {}

        def kept(kind: str, data: dict[str, Any]) -> None:
            if kind == "turn":
                made.update(data)
            emit(kind, data)

        await service.astream(user, sid, request.text, request.key, kept)
        turn = made
    return {**turn, "session": sid, "opening": opening}


def _check(found: dict[str, Any], request: Asked) -> None:
    """The session runs the graph asked for, and holds the conversation the front end has
    (or has it and this request's turn already: a request sent again)."""
    if found["graph"] != request.graph:
        raise Problem(
            409,
            "graph_mismatch",
            f"session `{found['session']}` runs graph `{found['graph']}`, not `{request.graph}`",
        )
    stored = tuple(m["content"] for m in found["transcript"] if m["role"] == "user")
    if stored not in (request.said, (*request.said, request.text)):
        raise Problem(
            409,
            "conversation_mismatch",
            f"the conversation does not match session `{found['session']}`: it holds "
            f"{len(stored)} user message(s) and this request has {len(request.said)} before the "
            "last; send the session's own messages, or start a new conversation",
        )


# ----- the endpoints ----------------------------------------------------------------------


async def models(call: Call) -> Response:
    listed = [
        {"id": name, "object": "model", "created": 0, "owned_by": "cgraph"}
        for name in sorted(call.service.served)
    ]
    return JSONResponse({"object": "list", "data": listed})


async def completions(call: Call) -> Response:
    request = asked(call)
    if call.data.get("stream") is True:
        return await _streamed(call, request)
    turn = await converse(call.service, call.user, request)
    reply = _joined(turn.get("opening"), str(turn.get("reply", "")))
    answer = {
        "id": _id(turn),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.graph,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": turn["usage"],
        "cgraph": _about(turn),
    }
    return JSONResponse(answer, headers={"x-session-id": turn["session"]})


async def _streamed(call: Call, request: Asked) -> Response:
    """`chat.completion.chunk` events: the role, the reply's pieces as the model writes them,
    then `finish_reason: stop`, the usage chunk if asked (`choices: []`; every chunk before
    it has `usage: null`) and `[DONE]`. A reply refused after its start was shown is
    followed by the one that replaced it (a chat protocol cannot take text back)."""
    work: Callable[[Emit], Awaitable[Any]] = partial(converse, call.service, call.user, request)
    pieces = await awaited_bridge(call, work)
    first = await anext(pieces)
    if first[0] == "failed":
        return _refused(problem_of(first[1]["error"], request.session))
    created, graph = int(time.time()), request.graph
    chunk_id = f"chatcmpl-{request.key[5:29]}"
    options = call.data.get("stream_options")
    counted = isinstance(options, dict) and options.get("include_usage") is True
    nothing: dict[str, Any] = {"usage": None} if counted else {}

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, **more: Any) -> bytes:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        data = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": graph,
            "choices": choices,
            **nothing,
            **more,
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    async def events() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""})
        shown = False
        async for kind, data in _after(first, pieces):
            if kind == "delta":
                shown = True
                yield chunk({"content": data["text"]})
            elif kind == "retracted":
                shown = False
                yield chunk({"content": "\n\n"})
            elif kind == "turn":
                if not shown and data.get("reply"):
                    yield chunk({"content": data["reply"]})  # a replayed turn, or no deltas
                yield chunk({}, "stop", cgraph=_about(data))
            elif kind == "usage" and counted:
                yield chunk(None, usage=data)
            elif kind == "failed":
                problem = problem_of(data["error"], request.session)
                yield f"data: {json.dumps(openai_error(problem))}\n\n".encode()
                return
        yield b"data: [DONE]\n\n"

    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


async def _after(
    first: tuple[str, Any], rest: AsyncIterator[tuple[str, Any]]
) -> AsyncIterator[tuple[str, Any]]:
    """`first` (read to learn whether the turn could start), then the rest."""
    yield first
    async for piece in rest:
        yield piece


def _refused(problem: Problem) -> Response:
    return JSONResponse(openai_error(problem), problem.status, headers=dict(problem.headers))


def _joined(opening: str | None, reply: str) -> str:
    return f"{opening}\n\n{reply}" if opening and reply else opening or reply


def _id(turn: dict[str, Any]) -> str:
    return f"chatcmpl-{turn['session']}-{turn.get('turn', 0)}"


def _about(turn: dict[str, Any]) -> dict[str, Any]:
    """What cgraph adds to an answer (OpenAI's clients keep unknown fields)."""
    keys = ("session", "turn", "state", "completed", "replayed")
    return {k: turn[k] for k in keys if k in turn}
