"""Local OpenAI-compatible chat servers that behave like real ones, on 127.0.0.1.

Each `Behaviour` is a known way a real server treats structured output, checked against
the real server where one runs here (`make test-providers` sends the same requests to
llama-cpp-python 0.3.36 and to `LLAMA_CPP_PYTHON`, and compares):

- `LLAMA_CPP_PYTHON`: HTTP 500 with a FastAPI validation error for `json_schema`;
  `json_object` honours a `schema` inside it (without one the JSON has any shape); a tool
  call is enforced only when `tool_choice` names the function; a second system message
  is accepted; an assistant message calling tools needs a string content (null or
  missing: 500).
- `FORCED_TOOLS`: refuses `response_format` (400) and tools it is not forced to call.
- `JSON_OBJECT_SCHEMA`: refuses `json_schema` and tools (400); needs the schema inside
  `json_object` to keep to it.
- `OPENAI`: accepts `json_schema` (and everything else).
- `ONE_SYSTEM`: a chat template that raises on any system message but the first (500).
- `LLAMA_CPP_SERVER`: llama.cpp's own `llama-server`: accepts `json_schema` (a grammar
  keeps the answer to it) and `json_object`, and takes a forced `tool_choice` without an
  error but answers in prose instead of calling the function.

Every server stops a generation at the request's `max_tokens` (`chars_per_token`
characters a token), cutting the answer with `finish_reason: length`.

A server answers from `answers` (dicts, checked against the schema it received: like a
grammar-constrained server, it cannot send an answer outside the schema; or `Calls`, a
round of calls of the offered tools), else from `by_schema` (an answer for every request
whose schema has that name), else with the first value of every enum. `delay` waits
before answering, `trickle` sends the body a few bytes at a time (a server streaming its
generation), `stall` never answers; `faults` fail chosen requests (an error status, a stream that
breaks off, a stall).

A body with `stream: true` is answered as OpenAI and llama.cpp's server answer it:
server-sent `chat.completion.chunk` events, `piece` characters of the content (or of a
call's arguments) at a time, `pause` seconds apart. In OpenAI's layout a tool call opens
with its index, id, type and name, and its arguments follow in deltas that carry only the
index; llama-cpp-python repeats the id and name in every delta (`deltas`). With
`hold_after`, every stream stops after that many pieces until `go` is set (a test sees
what arrived so far, then lets the rest come; a server that stalls after its headers).
With `drip`, a streamed answer never ends: its reply gets one more word every `drip`
seconds until the client hangs up (or 60 s pass). A huge answer is an answer with a huge
reply, streamed with a large `piece`.

Whatever the behaviour, the server refuses (400) what OpenAI refuses of a conversation
with tools: a `tool` message that answers no call of the assistant message before it, a
call left unanswered, arguments that are not a string, `tool_choice` without `tools`,
`stream_options` without `stream`, a malformed function; and of any request: no messages,
an unknown role, a system or user message without text, a `seed` that is no int64, a
`temperature` outside 0-2. `texts` are plain-text answers given in order (a model that
talks, as a simulated user's does).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
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
    required_tools: bool = True
    """Honours `tool_choice: required` (llama-cpp-python enforces only a named function)."""
    one_system: bool = False
    refusal_status: int = 400
    stream_layout: str = "openai"
    """How streamed deltas are laid out: `openai` or `llama-cpp-python` (see `deltas`)."""
    call_content: bool = False
    """Refuses (500) an assistant message calling tools without text content, null or
    missing (llama-cpp-python's request model and chat template need a string)."""
    ignores_forced_tools: bool = False
    """Takes a forced `tool_choice` (a named function, or `required`) without an error
    and answers in prose all the same, as llama.cpp's own server does."""


LLAMA_CPP_PYTHON = Behaviour(
    "llama-cpp-python",
    json_schema=False,
    required_tools=False,
    refusal_status=500,
    stream_layout="llama-cpp-python",
    call_content=True,
)
FORCED_TOOLS = Behaviour(
    "forced-tools", json_schema=False, json_object=False, only_forced_tools=True
)
JSON_OBJECT_SCHEMA = Behaviour("json-object-schema", json_schema=False, tools=False)
OPENAI = Behaviour("openai")
ONE_SYSTEM = Behaviour("one-system", one_system=True, refusal_status=500)
LLAMA_CPP_SERVER = Behaviour("llama.cpp server", ignores_forced_tools=True)

TALK = {"content": "Hello! How can I help you today?"}
PROSE = {"content": "Sure! I can help with that. What would you like to do next?"}
FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


@dataclass(frozen=True)
class Calls:
    """A round of tool calls the model makes instead of answering: (name, arguments)
    pairs, the arguments as the model writes them (a dict is sent as its JSON text)."""

    made: tuple[tuple[str, Any], ...]


class Refused(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.body = status, body


@dataclass
class ChatServer:
    """A running server; `bodies` are the requests it received, in order."""

    behaviour: Behaviour
    answers: list[dict[str, Any] | Calls] = field(default_factory=list)
    by_schema: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The answer to every request whose schema (or forced function) has this name."""
    bodies: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    trickle: float = 0.0
    stall: bool = False
    overloaded_from: int | None = None
    """From this request on (0-based), answer 503 as an overloaded server does."""
    piece: int = 4
    """Characters of content or arguments a streamed delta carries."""
    pause: float = 0.0
    """Seconds between streamed deltas (a model writing tokens)."""
    hold_after: int | None = None
    """A stream stops after this many deltas until `go` is set."""
    go: threading.Event = field(default_factory=threading.Event)
    drip: float = 0.0
    """Seconds between the words of a streamed answer that never ends (0: it ends)."""
    base: str = ""
    released: threading.Event = field(default_factory=threading.Event)
    faults: dict[int, str] = field(default_factory=dict)
    """Request number (0-based) → how the server fails it: `500` (an error status),
    `break` (the stream stops after `break_after` pieces and the connection closes, with
    no end), `stall` (no answer until the client hangs up)."""
    break_after: int = 0
    texts: list[str] = field(default_factory=list)
    """Plain-text answers, one a request in order (then `TALK`): a model that talks."""
    chars_per_token: int = 4
    """A generation stops at the body's `max_tokens`, counted as this many characters a
    token: the answer is cut there, with `finish_reason: length`, as a real server does."""

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion for `body`, or `Refused` as the real server would refuse it."""
        return completion(*self.message(body))

    def message(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The assistant message for `body` and its finish reason."""
        message, finish = self._generated(body)
        cap = body.get("max_tokens")
        return _capped(message, finish, cap * self.chars_per_token) if cap else (message, finish)

    def _generated(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        problem = conversation_problem(body)
        if problem:
            raise Refused(400, error(problem, "invalid_request_error"))
        b = self.behaviour
        if b.call_content:
            _check_call_content(body.get("messages") or [])
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
            return self._with_tools(body, fmt)
        if b.only_forced_tools:
            raise Refused(400, error("this server answers only forced tool calls"))
        return self._content(fmt)

    def _content(self, fmt: dict[str, Any]) -> tuple[dict[str, Any], str]:
        kind = fmt.get("type", "text")
        if kind == "json_schema":
            named = fmt["json_schema"]
            return {"content": json.dumps(self._answer(named["schema"], named["name"]))}, "stop"
        if kind == "json_object":
            # Without a schema the server promises JSON of any shape, and sends some.
            schema = fmt.get("schema") or {"type": "object"}
            return {"content": json.dumps(self._answer(schema, ""))}, "stop"
        return ({"content": self.texts.pop(0)} if self.texts else TALK), "stop"

    def _with_tools(self, body: dict[str, Any], fmt: dict[str, Any]) -> tuple[dict[str, Any], str]:
        b = self.behaviour
        if not b.tools:
            raise Refused(400, error("tools are not supported by this server"))
        functions = {t["function"]["name"]: t["function"] for t in body["tools"]}
        choice = body.get("tool_choice")
        named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
        if b.ignores_forced_tools and (named or choice == "required"):
            return PROSE, "stop"  # the choice is accepted, and not kept to
        if named:
            if named not in functions:
                raise Refused(400, error(f"tool_choice names `{named}`, which is not offered"))
            return called([(named, self._answer(functions[named]["parameters"], named))])
        if b.only_forced_tools:
            raise Refused(400, error("tool_choice must name a function"))
        head = self.answers[0] if self.answers else None
        if isinstance(head, Calls):
            self.answers.pop(0)
            return called(head.made)
        if choice == "required" and b.required_tools:
            return called([self._any_function(list(functions.values()))])
        return self._content(fmt)  # not forced: the model answers as the format says

    def _any_function(self, functions: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        """`tool_choice: required`: the next answer, as a call of the function it fits."""
        scripted = self.answers.pop(0) if self.answers else None
        if isinstance(scripted, Calls):
            raise AssertionError("tool calls scripted where an answer is due")
        for function in reversed(functions):
            answer = scripted or self.by_schema.get(function["name"])
            if answer is None:
                continue
            try:
                jsonschema.validate(answer, function["parameters"])
            except jsonschema.ValidationError:
                continue
            return function["name"], dict(answer)
        last = functions[-1]
        return last["name"], _first_values(last["parameters"])

    def _answer(self, schema: dict[str, Any], name: str) -> dict[str, Any]:
        if schema.get("properties") is None:
            return {"name": "", "description": ""}
        if self.answers:
            answer = self.answers.pop(0)
            if isinstance(answer, Calls):
                raise AssertionError(f"tool calls scripted, but `{name}` offers no tools")
        else:
            answer = self.by_schema.get(name) or _first_values(schema)
        jsonschema.validate(answer, schema)  # a grammar cannot produce anything else
        return answer


def _capped(message: dict[str, Any], finish: str, chars: int) -> tuple[dict[str, Any], str]:
    """The message as generated up to `chars` characters (its content, or each call's
    arguments): a generation that reaches the cap ends there, with `length`."""
    content = message.get("content")
    if isinstance(content, str) and len(content) > chars:
        return {**message, "content": content[:chars]}, "length"
    calls = message.get("tool_calls") or []
    if any(len(call["function"]["arguments"]) > chars for call in calls):
        cut = [
            {
                **call,
                "function": {
                    **call["function"],
                    "arguments": call["function"]["arguments"][:chars],
                },
            }
            for call in calls
        ]
        return {**message, "tool_calls": cut}, "length"
    return message, finish


def called(made: Sequence[tuple[str, Any]]) -> tuple[dict[str, Any], str]:
    """An assistant message calling `made` (name, arguments), as a server sends it."""
    calls = [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": name, "arguments": _text(arguments)},
        }
        for index, (name, arguments) in enumerate(made)
    ]
    return {"content": None, "tool_calls": calls}, "tool_calls"


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def conversation_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI would refuse this body's tools or messages (a 400), or None."""
    problem = _sampling_problem(body)
    if problem:
        return problem
    if body.get("tool_choice") is not None and not body.get("tools"):
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified."
        )
    if body.get("stream_options") is not None and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is set to true."
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not FUNCTION_NAME.fullmatch(
            str(function.get("name", ""))
        ):
            return f"Invalid 'tools[{index}].function.name': a string of [a-zA-Z0-9_-], 1 to 64"
        if not isinstance(function.get("parameters", {}), dict):
            return f"Invalid type for 'tools[{index}].function.parameters': expected an object"
    return _calls_problem(body.get("messages") or [])


ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _sampling_problem(body: dict[str, Any]) -> str | None:
    """What OpenAI refuses of a request's messages and sampling settings."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': empty array. Expected an array with minimum length 1."
    for index, message in enumerate(messages):
        if message.get("role") not in ROLES:
            return f"Invalid value for 'messages[{index}].role': {message.get('role')!r}"
        content = message.get("content")
        if message["role"] in ("system", "user") and not isinstance(content, (str, list)):
            return f"Invalid type for 'messages[{index}].content': expected a string"
    seed = body.get("seed")
    if seed is not None and (type(seed) is not int or not -(2**63) <= seed < 2**63):
        return "Invalid type for 'seed': expected an integer (int64)."
    temperature = body.get("temperature")
    if temperature is not None and not 0 <= temperature <= 2:
        return f"Invalid 'temperature': expected a value from 0 to 2, but got {temperature}."
    return None


def _calls_problem(messages: list[dict[str, Any]]) -> str | None:
    """Every `tool` message answers a call of the assistant message just before; every
    call is answered before the conversation goes on."""
    pending: list[str] = []
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return _unanswered(pending)
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        for number, call in enumerate(calls):
            if not isinstance(call.get("function", {}).get("arguments"), str):
                return (
                    f"Invalid type for 'messages[{index}].tool_calls[{number}].function."
                    "arguments': expected a string, but got an object instead."
                )
        pending = [str(call.get("id")) for call in calls]
    return _unanswered(pending) if pending else None


def _unanswered(pending: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response "
        f"messages: {', '.join(pending)}"
    )


def _check_call_content(messages: list[dict[str, Any]]) -> None:
    """llama-cpp-python 0.3.36's refusals of a tool-calling assistant message without text:
    its request model wants a string content, its chat template reads the key."""
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        if "content" not in message:
            raise Refused(500, error("'dict object' has no attribute 'content'"))
        if not isinstance(message["content"], str):
            detail = {
                "type": "string_type",
                "loc": (
                    "body",
                    "messages",
                    index,
                    "ChatCompletionRequestAssistantMessage",
                    "content",
                ),
                "msg": "Input should be a valid string",
                "input": message["content"],
            }
            raise Refused(500, error(f"1 validation error:\n  {detail!r}\n"))


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


def error(message: str, kind: str = "internal_server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


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


def deltas(
    message: dict[str, Any], piece: int, layout: str = "openai"
) -> Iterator[tuple[dict[str, Any], bool]]:
    """The message as a server streams it: (delta, whether it carries generated text)."""
    calls = message.get("tool_calls")
    if layout == "llama-cpp-python" and calls:
        yield from _llama_call_deltas(calls, piece)
    elif layout == "llama-cpp-python":
        yield {"role": "assistant"}, False
        yield from (({"content": text}, True) for text in _pieces(message["content"], piece))
    elif calls:
        yield from _openai_call_deltas(calls, piece)
    else:
        yield {"role": "assistant", "content": "", "refusal": None}, False
        yield from (({"content": text}, True) for text in _pieces(message["content"], piece))


def _openai_call_deltas(
    calls: list[dict[str, Any]], piece: int
) -> Iterator[tuple[dict[str, Any], bool]]:
    """OpenAI's layout: a call opens with its index, id, type and name (no arguments yet),
    and its arguments follow in deltas that carry only the index."""
    for index, call in enumerate(calls):
        function = {"name": call["function"]["name"], "arguments": ""}
        opening = {"index": index, "id": call["id"], "type": "function", "function": function}
        role = {"role": "assistant", "content": None, "refusal": None} if index == 0 else {}
        yield {**role, "tool_calls": [opening]}, False
        for text in _pieces(call["function"]["arguments"], piece):
            yield {"tool_calls": [{"index": index, "function": {"arguments": text}}]}, True


def _llama_call_deltas(
    calls: list[dict[str, Any]], piece: int
) -> Iterator[tuple[dict[str, Any], bool]]:
    """llama-cpp-python 0.3.36's layout: an empty role delta, then every delta repeats the
    call's index, id, type and name next to its piece of the arguments, and the legacy
    `function_call` too."""
    empty = {"role": None, "content": None, "function_call": None, "tool_calls": None}
    yield {**empty, "role": "assistant"}, False
    for index, call in enumerate(calls):
        name = call["function"]["name"]
        for text in _pieces(call["function"]["arguments"], piece):
            function = {"name": name, "arguments": text}
            made = {"index": index, "id": call["id"], "type": "function", "function": function}
            yield {**empty, "function_call": function, "tool_calls": [made]}, True


def _last_delta(layout: str, finish: str) -> dict[str, Any]:
    if layout == "llama-cpp-python" and finish == "tool_calls":
        return {"role": None, "content": None, "function_call": None, "tool_calls": None}
    return {}


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    """One `chat.completion.chunk` event (no delta: the usage event, with no choices)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    event: dict[str, Any] = {
        "id": "chatcmpl-local",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "local",
        "choices": choices,
    }
    if delta is None:
        event["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return event


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # the stdlib's name
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            server.bodies.append(body)
            fault = server.faults.get(len(server.bodies) - 1)
            if server.stall or fault == "stall":
                server.released.wait(60)
                return
            if fault == "500":
                self._send(500, json.dumps(error("the server failed")).encode())
                return
            time.sleep(server.delay)
            busy = server.overloaded_from is not None
            if busy and len(server.bodies) > server.overloaded_from:
                self._send(503, json.dumps(error("the server is overloaded")).encode())
                return
            try:
                message, finish = server.message(body)
            except Refused as refused:
                self._send(refused.status, json.dumps(refused.body).encode())
                return
            except (AssertionError, jsonschema.ValidationError) as wrong:  # the test's script
                self._send(500, json.dumps(error(f"the test script is wrong: {wrong}")).encode())
                return
            if body.get("stream") and server.drip:
                self._drip()
            elif body.get("stream"):
                self._stream(message, finish, body, broken=fault == "break")
            else:
                self._send(200, json.dumps(completion(message, finish)).encode())

        def _stream(
            self, message: dict[str, Any], finish: str, body: dict[str, Any], broken: bool
        ) -> None:
            self._open_stream()
            written = 0
            try:
                layout = server.behaviour.stream_layout
                for delta, generated in deltas(message, server.piece, layout):
                    if generated and written == server.hold_after:
                        server.go.wait(60)
                    if broken and written == server.break_after:
                        self.close_connection = True  # no last chunk: the body never ends
                        return
                    written += generated
                    self._event(json.dumps(chunk(delta)))
                    time.sleep(server.pause if generated else 0)
                self._event(json.dumps(chunk(_last_delta(layout, finish), finish)))
                if (body.get("stream_options") or {}).get("include_usage"):
                    self._event(json.dumps(chunk(None)))
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:  # the client gave up and hung up
                pass

        def _drip(self) -> None:
            """An answer whose reply grows by a word every `drip` seconds, for 60 s at most
            (loopback tests stay bounded) or until the client hangs up."""
            self._open_stream()
            opening = '{"exit": "stay", "reason": "still writing", "reply": "Let me think'
            try:
                self._event(json.dumps(chunk({"role": "assistant", "content": opening})))
                ends = time.monotonic() + 60
                while time.monotonic() < ends and not server.released.wait(server.drip):
                    self._event(json.dumps(chunk({"content": " and think"})))
            except OSError:  # the client gave up and hung up
                pass

        def _open_stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

        def _event(self, data: str) -> None:
            line = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()

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
        server.go.set()
        http.shutdown()
        http.server_close()
