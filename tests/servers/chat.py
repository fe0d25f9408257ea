"""Local OpenAI-compatible chat servers that behave like real ones, on 127.0.0.1.

Each `Behaviour` is a known way a real server treats structured output, checked against
the real server where one runs here (`make test-providers` sends the same requests to
llama-cpp-python 0.3.36 and to `LLAMA_CPP_PYTHON`, and compares):

- `LLAMA_CPP_PYTHON`: HTTP 500 with a FastAPI validation error for `json_schema`;
  `json_object` honours a `schema` inside it (without one the JSON has any shape); a tool
  call is enforced only when `tool_choice` names the function; a second system message
  is accepted.
- `FORCED_TOOLS`: refuses `response_format` (400) and tools it is not forced to call.
- `JSON_OBJECT_SCHEMA`: refuses `json_schema` and tools (400); needs the schema inside
  `json_object` to keep to it.
- `OPENAI`: accepts `json_schema` (and everything else).
- `ONE_SYSTEM`: a chat template that raises on any system message but the first (500).

A server answers from `answers` (dicts, checked against the schema it received: like a
grammar-constrained server, it cannot send an answer outside the schema) or, when the
list is empty, with the first value of every enum. `delay` waits before answering,
`trickle` sends the body a few bytes at a time (a server streaming its generation),
`stall` never answers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jsonschema


@dataclass(frozen=True)
class Behaviour:
    name: str
    json_schema: bool = True
    """Accepts `response_format: json_schema`; else refuses it with `refusal_status`."""
    json_object: bool = True
    tools: bool = True
    only_forced_tools: bool = False
    one_system: bool = False
    refusal_status: int = 400


LLAMA_CPP_PYTHON = Behaviour("llama-cpp-python", json_schema=False, refusal_status=500)
FORCED_TOOLS = Behaviour(
    "forced-tools", json_schema=False, json_object=False, only_forced_tools=True
)
JSON_OBJECT_SCHEMA = Behaviour("json-object-schema", json_schema=False, tools=False)
OPENAI = Behaviour("openai")
ONE_SYSTEM = Behaviour("one-system", one_system=True, refusal_status=500)


class Refused(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.body = status, body


@dataclass
class ChatServer:
    """A running server; `bodies` are the requests it received, in order."""

    behaviour: Behaviour
    answers: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    trickle: float = 0.0
    stall: bool = False
    overloaded_from: int | None = None
    """From this request on (0-based), answer 503 as an overloaded server does."""
    base: str = ""
    released: threading.Event = field(default_factory=threading.Event)

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion for `body`, or `Refused` as the real server would refuse it."""
        schema, forced = self._schema(body)
        if schema is None:
            return completion({"content": "Hello! How can I help you today?"}, "stop")
        answer = self._answer(schema)
        text = json.dumps(answer)
        if forced:
            call = {
                "id": "call_0",
                "type": "function",
                "function": {"name": forced, "arguments": text},
            }
            return completion({"content": None, "tool_calls": [call]}, "tool_calls")
        return completion({"content": text}, "stop")

    def _schema(self, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The schema the server enforces, and the function name when a tool is forced."""
        b = self.behaviour
        systems = [i for i, m in enumerate(body.get("messages", ())) if m.get("role") == "system"]
        if b.one_system and systems not in ([], [0]):
            raise Refused(500, error("System message must be at the beginning."))
        fmt = body.get("response_format") or {}
        kind = fmt.get("type", "text")
        if kind == "json_schema" and not b.json_schema:
            raise _refuse_format(b, "json_schema")
        if kind == "json_object" and not b.json_object:
            raise _refuse_format(b, "json_object")
        if body.get("tools"):
            return self._tool_schema(body)
        if b.only_forced_tools:
            raise Refused(400, error("this server answers only forced tool calls"))
        if kind == "json_schema":
            return fmt["json_schema"]["schema"], ""
        if kind == "json_object":
            # Without a schema the server promises JSON of any shape, and sends some.
            return fmt.get("schema") or {"type": "object"}, ""
        return None, ""

    def _tool_schema(self, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        if not self.behaviour.tools:
            raise Refused(400, error("tools are not supported by this server"))
        choice = body.get("tool_choice")
        name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        if not name:
            if self.behaviour.only_forced_tools:
                raise Refused(400, error("tool_choice must name a function"))
            return None, ""  # not forced: a small model just talks
        tool = next(t for t in body["tools"] if t["function"]["name"] == name)
        return tool["function"]["parameters"], name

    def _answer(self, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("properties") is None:
            return {"name": "", "description": ""}
        answer = self.answers.pop(0) if self.answers else _first_values(schema)
        jsonschema.validate(answer, schema)  # a grammar cannot produce anything else
        return answer


def _refuse_format(b: Behaviour, kind: str) -> Refused:
    if b.refusal_status == 500:  # FastAPI's validation error, as llama-cpp-python sends it
        detail = {
            "type": "literal_error",
            "loc": ("body", "response_format", "type"),
            "msg": "Input should be 'text' or 'json_object'",
            "input": kind,
        }
        return Refused(500, error(f"1 validation error:\n  {detail!r}\n"))
    return Refused(b.refusal_status, error(f"response_format type `{kind}` is not supported"))


def _first_values(schema: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, spec in schema.get("properties", {}).items():
        if "enum" in spec:
            found[key] = spec["enum"][0]
        elif spec.get("type") == "array":
            found[key] = []
        else:
            found[key] = f"a {key}"
    return found


def error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "internal_server_error", "code": None}}


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": "local",
        "choices": [
            {"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # the stdlib's name
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            server.bodies.append(body)
            if server.stall:
                server.released.wait(60)
                return
            time.sleep(server.delay)
            busy = server.overloaded_from is not None
            if busy and len(server.bodies) > server.overloaded_from:
                self._send(503, json.dumps(error("the server is overloaded")).encode())
                return
            try:
                status, payload = 200, server.reply(body)
            except Refused as refused:
                status, payload = refused.status, refused.body
            self._send(status, json.dumps(payload).encode())

        def _send(self, status: int, data: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if not server.trickle:
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for start in range(0, len(data), 16):
                    piece = data[start : start + 16]
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                    if server.released.wait(server.trickle):
                        return
                self.wfile.write(b"0\r\n\r\n")
            except OSError:  # the client gave up and hung up
                pass

        def log_message(self, *args: Any) -> None:
            return None

    return Handler


@contextmanager
def serve(behaviour: Behaviour, **options: Any) -> Iterator[ChatServer]:
    """Run a `ChatServer` on 127.0.0.1 for the duration of the block."""
    server = ChatServer(behaviour, **options)
    http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    http.daemon_threads = True
    server.base = f"http://127.0.0.1:{http.server_address[1]}/v1"
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        http.shutdown()
        http.server_close()
