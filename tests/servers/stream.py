"""A small OpenAI-compatible chat server on 127.0.0.1 that streams, for the streaming bench
and tests.

It answers `/v1/chat/completions` with one fixed answer, cut into `pieces` chunks sent
`delay` seconds apart, like a model writing tokens: as server-sent events
(`data: {chat.completion.chunk}` lines, then `data: [DONE]`) when the body asks for
`stream: true`, else as one `chat.completion` once the whole answer is "written" (the same
total time). With `calls`, a request that offers tools and holds no tool result yet is
answered with those calls first (streamed as OpenAI streams them: a call opens with its
index, id and name, its arguments follow in deltas). A body whose messages are not a list
of role/content objects gets a 400, as a real server would give.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StreamServer:
    """`with StreamServer(answer) as server:` serves at `server.base` until the block ends."""

    def __init__(
        self,
        answer: str,
        *,
        pieces: int = 40,
        delay: float = 0.02,
        calls: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.answer, self.pieces, self.delay = answer, pieces, delay
        self.calls = tuple(calls)
        """Tool calls (name, arguments as JSON text) made before the answer."""
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = self.peak = 0
        """Requests being answered now, and the most there ever were at once."""
        self._counting = threading.Lock()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def __enter__(self) -> StreamServer:
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def chunks(self, text: str | None = None) -> list[str]:
        text = self.answer if text is None else text
        size = max(len(self.answer) // self.pieces, 1)
        return [text[i : i + size] for i in range(0, len(text), size)]

    def calling(self, body: dict[str, Any]) -> bool:
        """Whether `body` is answered with the tool calls."""
        answered = any(m.get("role") == "tool" for m in body["messages"])
        return bool(self.calls and body.get("tools") and not answered)

    def message(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.calling(body):
            return {"role": "assistant", "content": self.answer}
        made = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(self.calls)
        ]
        return {"role": "assistant", "content": None, "tool_calls": made}


def _deltas(server: StreamServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    if not server.calling(body):
        return [{"content": piece} for piece in server.chunks()]
    found: list[dict[str, Any]] = []
    for index, (name, arguments) in enumerate(server.calls):
        opening = {"index": index, "id": f"call_{index}", "type": "function"}
        found.append({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
        found += [
            {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            for piece in server.chunks(arguments)
        ]
    return found


def _handler(server: StreamServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            server.bodies.append(body)
            with server._counting:
                server.in_flight += 1
                server.peak = max(server.peak, server.in_flight)
            try:
                self._answer(body)
            finally:
                with server._counting:
                    server.in_flight -= 1

        def _answer(self, body: dict[str, Any]) -> None:
            messages = body.get("messages")
            if not isinstance(messages, list) or not all("role" in m for m in messages):
                self._json(400, {"error": {"message": "messages must be role/content objects"}})
            elif body.get("stream"):
                self._stream(body)
            else:
                time.sleep(server.delay * len(_deltas(server, body)))
                self._json(200, _completion(server.message(body)))

        def _stream(self, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for delta in _deltas(server, body):
                time.sleep(server.delay)
                self._event(_chunk(delta, None))
            finish = "tool_calls" if server.calling(body) else "stop"
            self._event(_chunk({}, finish))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
            self.wfile.flush()

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    return Handler


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chunk-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [choice],
    }


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    choice = {"index": 0, "finish_reason": finish, "message": message}
    usage = {"prompt_tokens": 10, "completion_tokens": 40, "total_tokens": 50}
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [choice],
        "usage": usage,
    }
