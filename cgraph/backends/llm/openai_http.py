"""A thin async client of the OpenAI chat protocol, for the servers that speak it.

`litellm.acompletion` costs a server about 5 ms of CPU a call (its logging, cost and
callback machinery, a response object rebuilt twice); one POST on a kept-alive aiohttp
session costs under 1. httpx's pool is no lighter than litellm once hundreds of calls
wait at once: it checks every pooled connection at each request (19 ms of CPU a call
with 256 waiting, against aiohttp's 0.8, measured the same way). For an `openai/` model,
or any model given an `--api-base` whose route is OpenAI-compatible, the async driver
takes this path; the rest stays on litellm. It takes litellm's keyword arguments
(`LiteLLMModel.arguments`) and answers with an object read the way litellm's response is
read (`.choices[0].message.content`, `.tool_calls[i].function.arguments`,
`.finish_reason`), so the model reads both the same way. Errors are raised under the
names litellm gives them, with the status and the server's words, so `failures.classify`
judges them alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from cgraph.backends.llm.providers import OPENAI_COMPATIBLE, provider_of

OPENAI_BASE = "https://api.openai.com/v1"
PROXY_VARIABLES = tuple(f"{name}_proxy" for name in ("http", "https", "all")) + tuple(
    f"{name.upper()}_PROXY" for name in ("http", "https", "all")
)
# litellm's keyword arguments that are not part of the request body.
_NOT_BODY = frozenset({"model", "api_base", "api_key", "timeout", "num_retries", "stream"})
_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def speaks_openai(name: str, api_base: str | None) -> bool:
    """The model's server speaks the OpenAI chat protocol: this client can ask it."""
    provider = provider_of(name)
    return provider == "openai" or (api_base is not None and provider in OPENAI_COMPATIBLE)


class ProviderError(Exception):
    """A refused request: `status_code` and the server's body, as litellm reports one."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"Error code: {status} - {body[:2000]}")
        self.status_code = status
        self.message = str(self)


def _error(status: int, body: str) -> ProviderError:
    name = _NAMES.get(status) or ("InternalServerError" if status >= 500 else "APIError")
    kind = type(name, (ProviderError,), {})  # the name litellm would give it
    return kind(status, body)  # type: ignore[no-any-return]


class APIConnectionError(Exception):
    """The request could not be sent or its answer read (the cause is chained)."""


def _namespace(data: Any) -> Any:
    """JSON as attributes, the way litellm's response objects are read."""
    if isinstance(data, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in data.items()})
    if isinstance(data, list):
        return [_namespace(v) for v in data]
    return data


_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _shared_session() -> Any:
    """The running loop's kept-alive `aiohttp.ClientSession`, shared by every model of the
    process: one per session's model stalled the loop with an SSL context (10-20 ms of
    CPU) whenever a session was opened, and left every connection cold. It is closed
    when the loop's runner ends (`asyncio.run`, uvicorn) and cancels what still runs."""
    import aiohttp

    loop = asyncio.get_running_loop()
    session = _SESSIONS.get(loop)
    if session is None or session.closed:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(total=None)  # each call is bounded by its caller
        # The proxy variables are read as httpx and litellm read them; without any, none of
        # the environment is (aiohttp would read ~/.netrc at every request).
        proxied = any(os.environ.get(name) for name in PROXY_VARIABLES)
        session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=proxied)
        _SESSIONS[loop] = session
        _KEEPERS.add(loop.create_task(_closed_at_the_end(session)))
    return session


_KEEPERS: set[asyncio.Task[None]] = set()
"""The tasks that close each loop's session (kept so none is collected while it waits)."""


async def _closed_at_the_end(session: Any) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        _KEEPERS.discard(asyncio.current_task())
        await session.close()


class OpenAIHTTP:
    """The requests of one model, on the loop's shared session (`_shared_session`)."""

    def __init__(self, name: str, api_base: str | None, api_key: str | None) -> None:
        self.model = name.split("/", 1)[1] if provider_of(name) and "/" in name else name
        self.url = (api_base or OPENAI_BASE).rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def _body(self, args: dict[str, Any], stream: bool) -> bytes:
        body = {k: v for k, v in args.items() if k not in _NOT_BODY and v is not None}
        body["model"] = self.model
        if stream:  # the last chunk then carries the provider's token counts
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    async def _post(self, body: bytes) -> Any:
        """The response once its head is read; a refusal raised with the server's words."""
        import aiohttp

        try:
            response = await _shared_session().post(self.url, data=body, headers=self.headers)
            if response.status >= 400:
                text = (await response.read()).decode("utf-8", "replace")
                response.release()
                raise _error(response.status, text)
        except TimeoutError:
            raise
        except aiohttp.ClientError as err:
            raise APIConnectionError(f"{type(err).__name__}: {err}") from err
        return response

    async def create(self, args: dict[str, Any]) -> Any:
        """The answer to one request (litellm's arguments), as attributes."""
        import aiohttp

        response = await self._post(self._body(args, False))
        try:
            data = await response.read()
        except aiohttp.ClientError as err:
            raise APIConnectionError(f"{type(err).__name__}: {err}") from err
        finally:
            response.release()
        try:
            return _namespace(json.loads(data))
        except ValueError as err:
            said = data[:200].decode("utf-8", "replace")
            raise _error(502, f"the server's answer is not JSON: {said}") from err

    async def open_stream(self, args: dict[str, Any]) -> AsyncIterator[Any]:
        """The answer's chunks (server-sent events), once the server has accepted the
        request: a refusal is raised here, before any chunk (so it can be retried)."""
        return _chunks(await self._post(self._body(args, True)))


async def _chunks(response: Any) -> AsyncIterator[Any]:
    import aiohttp

    try:
        async for raw in response.content:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            yield _namespace(json.loads(data))
    except TimeoutError:
        raise
    except aiohttp.ClientError as err:
        raise APIConnectionError(f"{type(err).__name__}: {err}") from err
    finally:
        response.release()


def _call(call: dict[str, str]) -> dict[str, Any]:
    function = {"name": call["name"], "arguments": call["arguments"]}
    return {"id": call["id"], "type": "function", "function": function}


def built(chunks: list[Any]) -> Any:
    """The whole answer from its streamed chunks: content joined, tool calls assembled by
    index from their deltas, the usage of the chunk that carries it (litellm's
    `stream_chunk_builder`, for this client's chunks)."""
    content, finish, usage = "", None, None
    calls: dict[int, dict[str, str]] = {}
    empty = {"id": "", "name": "", "arguments": ""}
    for chunk in chunks:
        usage = getattr(chunk, "usage", None) or usage
        for choice in getattr(chunk, "choices", None) or ():
            finish = getattr(choice, "finish_reason", None) or finish
            delta = getattr(choice, "delta", None)
            content += str(getattr(delta, "content", None) or "")
            for call in getattr(delta, "tool_calls", None) or ():
                slot = calls.setdefault(getattr(call, "index", 0) or 0, dict(empty))
                slot["id"] = getattr(call, "id", None) or slot["id"]
                function = getattr(call, "function", None)
                slot["name"] = getattr(function, "name", None) or slot["name"]
                slot["arguments"] += str(getattr(function, "arguments", None) or "")
    tool_calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for _, c in sorted(calls.items())
    ]
    message = {"role": "assistant", "content": content or None, "tool_calls": tool_calls or None}
    whole = _namespace({"choices": [{"message": message, "finish_reason": finish}]})
    whole.usage = usage
    return whole
