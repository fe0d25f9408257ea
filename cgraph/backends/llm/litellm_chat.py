"""Any provider litellm speaks to, asked for structured output, with bounded retries.

The answer's JSON Schema (the exit field an enum of the state's exit ids) goes out as
`response_format={"type": "json_schema", ...}` with `strict: true`. Where litellm says a
model lacks that but has tool calling, the schema is sent as one forced tool call instead;
otherwise as JSON mode (`json_object`), the prompt describing the answer. Whatever comes
back is validated by the engine, never trusted.

Timeouts, rate limits, 5xx answers and connection errors are retried with exponential
backoff and jitter, up to `retries` times; then `LLMError` is raised and the engine
answers with the graph's fallback (the graceful degradation of the Delight design).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any, Literal

from cgraph.backends.llm.types import LLMRequest
from cgraph.errors import ConfigError, LLMError

Structured = Literal["auto", "json_schema", "tool", "json_object"]
# Providers that speak OpenAI's API: local servers (vLLM, llama.cpp, LM Studio) accept
# `response_format` json_schema even when litellm's model table has never heard of the model.
OPENAI_COMPATIBLE = frozenset(
    {"openai", "hosted_vllm", "lm_studio", "llamafile", "openai_like", "custom_openai", "vllm"}
)
TOOL_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta", "gemini"})
RETRYABLE = (
    "Timeout",
    "RateLimitError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
)


def load_litellm() -> Any:
    # Never fetch the model cost map from the network at import time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from cgraph.backends.embed import heavy_import_lock

    with heavy_import_lock:
        import litellm

    litellm.suppress_debug_info = True  # our errors say what failed; no links on the terminal
    return litellm


def _local_key(name: str, api_base: str | None) -> str | None:
    # A local OpenAI-compatible server (llama.cpp, vLLM, LM Studio) wants no key, but the
    # OpenAI client refuses to send a request without one.
    if api_base and name.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return "no-key"
    return None


class LiteLLMModel:
    """A `ChatModel` backed by `litellm.completion`."""

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 600,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        structured: Structured = "auto",
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        extra: dict[str, Any] | None = None,
        completion: Callable[..., Any] | None = None,
    ) -> None:
        if not name:
            raise LLMError("a litellm model name is required, e.g. `gpt-4o-mini`")
        self.name = name
        self.api_base, self.api_key = api_base, api_key or _local_key(name, api_base)
        self.temperature, self.max_tokens, self.timeout = temperature, max_tokens, timeout
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.structured = structured
        self._sleep, self._jitter = sleep, jitter
        self.extra = dict(extra or {})
        self._completion = completion
        """Replaces `litellm.completion` (a test seam)."""
        self._mode: str | None = None
        self.calls = 0
        """Requests sent to the provider, retries included."""

    def validate(self) -> None:
        """Fail now, not on every turn, when litellm knows no provider for this name."""
        try:
            load_litellm().get_llm_provider(self.name, api_base=self.api_base)
        except Exception as err:
            raise ConfigError(
                f"unknown model `{self.name}`: name a provider, e.g. `openai/{self.name}`, "
                "`anthropic/…`, `ollama/…`, or pass --api-base for an OpenAI-compatible server"
            ) from err

    def mode(self) -> str:
        """How the schema is sent: `json_schema`, `tool` or `json_object`."""
        if self._mode is None:
            self._mode = self.structured if self.structured != "auto" else self._detect()
        return self._mode

    def _detect(self) -> str:
        litellm = load_litellm()
        try:
            _, provider, _, _ = litellm.get_llm_provider(self.name, api_base=self.api_base)
        except Exception:  # an unknown provider only means no capability is known for it
            provider = ""
        if _supports(litellm.supports_response_schema, self.name, provider):
            return "json_schema"
        if provider in OPENAI_COMPATIBLE:
            return "json_schema"
        if provider in TOOL_PROVIDERS or _supports(
            litellm.supports_function_calling, self.name, provider
        ):
            return "tool"
        return "json_object"

    def arguments(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of `litellm.completion` for `request`."""
        args: dict[str, Any] = {
            "model": self.name,
            "messages": [_message(m) for m in request.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,  # retries are ours, with backoff we control and can test
            **self.extra,
        }
        if self.api_base:
            args["api_base"] = self.api_base
        if self.api_key:
            args["api_key"] = self.api_key
        mode = self.mode()
        if mode == "json_schema":
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "schema": request.schema,
                    "strict": True,
                },
            }
        elif mode == "tool" and request.tools:
            # The answer is one more function; the model must call one of them.
            args["tools"] = [*_offered(request), _tool(request)]
            args["tool_choice"] = "required"
        elif mode == "tool":
            args["tools"] = [_tool(request)]
            args["tool_choice"] = {"type": "function", "function": {"name": request.schema_name}}
        else:
            args["response_format"] = {"type": "json_object"}
        if request.tools and mode != "tool":
            args["tools"] = _offered(request)
            args["tool_choice"] = "auto"
        return args

    def complete(self, request: LLMRequest) -> str:
        completion = self._completion or load_litellm().completion
        args = self.arguments(request)
        attempt = 0
        while True:
            self.calls += 1
            try:
                response = completion(**args)
            except Exception as err:
                if not _retryable(err) or attempt >= self.retries:
                    raise LLMError(_describe(self.name, err, attempt)) from err
                self._sleep(self._delay(attempt))
                attempt += 1
                continue
            return _content(response, request)

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with "equal jitter": half fixed, half random."""
        cap = min(self.max_backoff, self.backoff * (2**attempt))
        return float(cap / 2 + self._jitter() * cap / 2)


def _supports(check: Callable[..., bool], model: str, provider: str) -> bool:
    try:
        return bool(check(model=model, custom_llm_provider=provider or None))
    except Exception:  # litellm raises for models missing from its map: assume "no"
        return False


def _tool(request: LLMRequest) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": request.schema_name,
            "description": "Give your answer.",
            "parameters": request.schema,
        },
    }


def _retryable(err: Exception) -> bool:
    names = {cls.__name__ for cls in type(err).__mro__}
    if names & set(RETRYABLE):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (408, 429))


def _describe(name: str, err: Exception, attempt: int) -> str:
    tries = f" after {attempt + 1} attempts" if attempt else ""
    message = str(getattr(err, "message", "") or err).strip().splitlines()
    return f"model `{name}` failed{tries}: {type(err).__name__}: {message[0] if message else ''}"


def _content(response: Any, request: LLMRequest) -> str:
    """The answer's text: the message content, or the answer function's arguments; calls of
    offered tools come back as `{"tool_calls": [{"id", "name", "arguments"}]}`."""
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, KeyError, TypeError) as err:
        raise LLMError(f"the provider's response has no message: {response!r:.200}") from err
    calls = getattr(message, "tool_calls", None) or []
    answer = [c for c in calls if getattr(c.function, "name", None) == request.schema_name]
    if calls and (answer or not request.tools):  # no tools offered: the call is the answer
        return str((answer or calls)[0].function.arguments or "")
    if calls:
        found = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments or "{}"}
            for c in calls
        ]
        return json.dumps({"tool_calls": found})
    return str(message.content or "")


def _message(message: dict[str, str]) -> dict[str, Any]:
    """A chat message for the provider: an assistant's tool calls, kept as JSON text in the
    request, become OpenAI's `tool_calls` list."""
    if "tool_calls" not in message:
        return dict(message)
    calls = [
        {"id": c["id"], "type": "function",
         "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in json.loads(message["tool_calls"])
    ]  # fmt: skip
    return {**message, "content": message.get("content") or None, "tool_calls": calls}


def _offered(request: LLMRequest) -> list[dict[str, Any]]:
    return [{"type": "function", "function": dict(f)} for f in request.tools]
