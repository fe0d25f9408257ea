"""A thin async client of the OpenAI chat protocol, for the servers that speak it.

`litellm.acompletion` costs a server about 5 ms of CPU a call (its logging, cost and
callback machinery, a response object rebuilt twice); one POST on a kept-alive
`httpx.AsyncClient` costs under 1. For an `openai/` model, or any model given an
`--api-base` whose route is OpenAI-compatible, the async driver takes this path; the
rest stays on litellm. It takes litellm's keyword arguments (`LiteLLMModel.arguments`)
and answers with an object read the way litellm's response is read (`.choices[0]
.message.content`, `.tool_calls[i].function.arguments`, `.finish_reason`), so the model
reads both the same way. Errors are raised under the names litellm gives them, with the
status and the server's words, so `failures.classify` judges them alike.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from cgraph.backends.llm.providers import OPENAI_COMPATIBLE, provider_of

OPENAI_BASE = "https://api.openai.com/v1"
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


class OpenAIHTTP:
    """One kept-alive `httpx.AsyncClient` per event loop (created on first use)."""

    def __init__(self, name: str, api_base: str | None, api_key: str | None) -> None:
        self.model = name.split("/", 1)[1] if provider_of(name) and "/" in name else name
        self.url = (api_base or OPENAI_BASE).rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._client: Any = None
        self._loop: Any = None

    def _http(self) -> Any:
        import asyncio

        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
            self._client = httpx.AsyncClient(limits=limits, timeout=None)
            self._loop = loop
        return self._client

    def _body(self, args: dict[str, Any], stream: bool) -> bytes:
        body = {k: v for k, v in args.items() if k not in _NOT_BODY and v is not None}
        body["model"] = self.model
        if stream:
            body["stream"] = True
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    async def create(self, args: dict[str, Any]) -> Any:
        """The answer to one request (litellm's arguments), as attributes."""
        import httpx

        try:
            response = await self._http().post(
                self.url, content=self._body(args, False), headers=self.headers
            )
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as err:
            raise APIConnectionError(f"{type(err).__name__}: {err}") from err
        if response.status_code >= 400:
            raise _error(response.status_code, response.text)
        try:
            return _namespace(response.json())
        except ValueError as err:
            raise _error(502, f"the server's answer is not JSON: {response.text[:200]}") from err

    async def open_stream(self, args: dict[str, Any]) -> AsyncIterator[Any]:
        """The answer's chunks (server-sent events), once the server has accepted the
        request: a refusal is raised here, before any chunk (so it can be retried)."""
        import httpx

        client = self._http()
        body = self._body(args, True)
        request = client.build_request("POST", self.url, content=body, headers=self.headers)
        try:
            response = await client.send(request, stream=True)
            if response.status_code >= 400:
                text = (await response.aread()).decode("utf-8", "replace")
                await response.aclose()
                raise _error(response.status_code, text)
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as err:
            raise APIConnectionError(f"{type(err).__name__}: {err}") from err
        return _chunks(response)


async def _chunks(response: Any) -> AsyncIterator[Any]:
    import httpx

    try:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            yield _namespace(json.loads(data))
    except httpx.TimeoutException:
        raise
    except httpx.HTTPError as err:
        raise APIConnectionError(f"{type(err).__name__}: {err}") from err
    finally:
        await response.aclose()


def _call(call: dict[str, str]) -> dict[str, Any]:
    function = {"name": call["name"], "arguments": call["arguments"]}
    return {"id": call["id"], "type": "function", "function": function}


def built(chunks: list[Any]) -> Any:
    """The whole answer from its streamed chunks: content joined, tool calls assembled by
    index from their deltas (litellm's `stream_chunk_builder`, for this client's chunks)."""
    content, finish = "", None
    calls: dict[int, dict[str, str]] = {}
    empty = {"id": "", "name": "", "arguments": ""}
    for chunk in chunks:
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
    return _namespace({"choices": [{"message": message, "finish_reason": finish}]})
