"""A slow OpenAI-compatible model server for the serving bench: real HTTP on loopback,
an asyncio server that holds any number of waiting calls, and answers that are valid for
every mode a client asks for after `--delay` seconds.

    python bench/fake_model.py --port 8100 --delay 1.0

`POST /v1/chat/completions` answers as OpenAI's server does: a `json_schema` response
format gets an instance of its schema; a forced function (`tool_choice`) a call of it with
arguments valid for its parameters; `json_object` a JSON object; anything else plain text
("ok"); with `"stream": true`, the same answer as server-sent chunks ending in `[DONE]`.
The instance prefers `stay` where an enum offers it (a conversation goes on) and fills
every required field. A request without `model` or `messages`, or a body that is not
JSON, gets the 400 an OpenAI server gives. `GET /stats` tells the most calls waited on at
once. Every loop is bounded by its connection; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
import uuid
from typing import Any

STAY = "stay"
TEXT = "ok"
STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A value valid for `schema` (the subset of JSON Schema structured outputs allow)."""
    defs = schema.get("$defs", defs or {})
    if "$ref" in schema:
        return instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        choices = schema["enum"]
        return STAY if STAY in choices else choices[0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return instance(options[0], defs)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {k: instance(properties[k], defs) for k in required if k in properties}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        return [instance(item, defs) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return TEXT.ljust(int(schema.get("minLength", 0)), "k")
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for a chat completion request."""
    forced = request.get("tool_choice")
    if isinstance(forced, dict) and forced.get("type") == "function":
        name = forced["function"]["name"]
        tool = next(t for t in request.get("tools", []) if t["function"]["name"] == name)
        arguments = json.dumps(instance(tool["function"].get("parameters", {})))
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function"}
        call["function"] = {"name": name, "arguments": arguments}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    shape = request.get("response_format") or {}
    if shape.get("type") == "json_schema":
        content = json.dumps(instance(shape["json_schema"]["schema"]))
    elif shape.get("type") == "json_object":
        content = json.dumps({"exit": STAY, "reason": TEXT, "reply": TEXT})
    else:
        content = TEXT
    return {"role": "assistant", "content": content}


def refusal(request: Any) -> str | None:
    """What an OpenAI server would refuse in this request, if anything."""
    if not isinstance(request, dict):
        return "the body must be a JSON object"
    if not isinstance(request.get("model"), str):
        return "you must provide a model parameter"
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    return None


class Model:
    """The server's state: its delay and the calls waiting."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.waiting = self.most = self.calls = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (x.partition(":") for x in lines[1:] if x)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET" and path.startswith("/stats"):
                    stats = {"most_waiting": self.most, "calls": self.calls}
                    await self._json(writer, 200, stats)
                elif method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                    await self._complete(writer, body)
                else:
                    await self._json(writer, 404, _error(f"no route {method} {path}"))
                await writer.drain()
        writer.close()

    async def _complete(self, writer: asyncio.StreamWriter, body: bytes) -> None:
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        refused = refusal(request)
        if refused is not None:
            await self._json(writer, 400, _error(refused))
            return
        self.calls += 1
        self.waiting += 1
        self.most = max(self.most, self.waiting)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.waiting -= 1
        message = answer(request)
        made = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "created": int(time.time()),
            "model": request["model"],
            "system_fingerprint": "fake",
        }
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        if not request.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": _finish(message)}
            await self._json(
                writer,
                200,
                made | {"object": "chat.completion", "choices": [choice], "usage": usage},
            )
            return
        writer.write(STREAM_HEAD)
        for delta in _deltas(message):
            chunk = made | {"object": "chat.completion.chunk", "choices": [delta]}
            _chunk(writer, f"data: {json.dumps(chunk)}\n\n")
        _chunk(writer, "data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")

    async def _json(self, writer: asyncio.StreamWriter, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
        head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        writer.write(f"{head}content-length: {len(payload)}\r\n\r\n".encode() + payload)


def _finish(message: dict[str, Any]) -> str:
    return "tool_calls" if message.get("tool_calls") else "stop"


def _deltas(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The message in stream chunks: the role, the content in pieces (or the tool call's
    arguments), then the finish."""
    first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    pieces: list[dict[str, Any]] = [first]
    calls = message.get("tool_calls")
    if calls:
        call = calls[0]
        named = {"index": 0, "id": call["id"], "type": "function"}
        named["function"] = {"name": call["function"]["name"], "arguments": ""}
        pieces.append({"index": 0, "delta": {"tool_calls": [named]}, "finish_reason": None})
        text = call["function"]["arguments"]
        for start in range(0, len(text), 16):
            part = {"index": 0, "function": {"arguments": text[start : start + 16]}}
            pieces.append({"index": 0, "delta": {"tool_calls": [part]}, "finish_reason": None})
    else:
        text = message["content"]
        for start in range(0, len(text), 16):
            delta = {"content": text[start : start + 16]}
            pieces.append({"index": 0, "delta": delta, "finish_reason": None})
    pieces.append({"index": 0, "delta": {}, "finish_reason": _finish(message)})
    return pieces


def _chunk(writer: asyncio.StreamWriter, text: str) -> None:
    data = text.encode()
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


async def main(port: int, delay: float) -> None:
    model = Model(delay)
    server = await asyncio.start_server(model.serve, "127.0.0.1", port, backlog=4096)
    print(f"fake model on 127.0.0.1:{port}, {delay} s a call", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.port, args.delay))
