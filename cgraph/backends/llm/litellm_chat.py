"""Any provider litellm speaks to, asked for structured output, within a turn's deadline.

The answer's JSON Schema (the exit field an enum of the state's exit ids) is sent in one
of three modes (`cgraph.backends.llm.structured`). `auto` starts from what the provider
is known to accept; when the server refuses that mode it tries the next one, keeps the one
that works for the rest of the session and says so once (`negotiation`, `notices`).
Whatever comes back is validated by the engine, never trusted (`responses`).

Timeouts (except against a server on this machine, which is still busy with the abandoned
answer), rate limits, 5xx answers and connection errors are retried with exponential
backoff and jitter, up to `retries` times and never past the turn's deadline (`timeout`
seconds from `begin_turn`). Anything else is permanent and raised at once as `LLMError`;
so is a connection refused before any answer, naming the address nobody listens at.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cgraph.backends.llm.awaited import Awaited, lean_client
from cgraph.backends.llm.chunks import MAX_STREAMED_CHARS as MAX_STREAMED_CHARS  # re-exported
from cgraph.backends.llm.chunks import Gathered, failed
from cgraph.backends.llm.deadline import CallTimeout, call_within, read_within
from cgraph.backends.llm.failures import Failure, classify
from cgraph.backends.llm.negotiation import Negotiation
from cgraph.backends.llm.openai_http import speaks_openai
from cgraph.backends.llm.providers import (
    OPENAI_COMPATIBLE,
    Mode,
    check_route,
    env_has,
    is_local,
    key_variable,
    load_litellm,
    provider_of,
)
from cgraph.backends.llm.responses import answer_text
from cgraph.backends.llm.structured import mode_arguments, mode_messages
from cgraph.errors import ConfigError, LLMError, UnknownModel
from cgraph.observe import Noted, model_call
from cgraph.runtime.ports import Capabilities, LLMRequest, Whole
from cgraph.spec.model import Graph, Structured

# What litellm imports on its first call (seconds on a busy machine): imported at start-up
# so that a turn's deadline measures the server, not the import of its client.
_FIRST_CALL_MODULES = (
    "httpcore",
    "openai.resources",
    "litellm.llms.openai.openai",
    "litellm.litellm_core_utils.default_encoding",
    "litellm.proxy._types",
    "litellm.responses.mcp.chat_completions_handler",
)


def warm_up() -> None:
    """Import now what litellm would import inside the first turn's deadline."""
    from cgraph.backends.embed import heavy_import_lock

    with heavy_import_lock:
        for name in _FIRST_CALL_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:  # a litellm without that module: its first call pays instead
                continue


@dataclass(frozen=True, slots=True)
class Attempt:
    """One call of the provider: litellm's arguments, and the seconds it may take."""

    args: dict[str, Any]
    seconds: float


class LiteLLMModel(Awaited):
    """A `ChatModel` backed by `litellm.completion` (and, awaited, `backends.llm.awaited`)."""

    capabilities = Capabilities(streams=True, calls_tools=True, writes_prose=True, awaits=True)

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = 600,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        structured: Structured = "auto",
        one_system: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
        extra: dict[str, Any] | None = None,
        completion: Callable[..., Any] | None = None,
        embedding_model: str = "",
        acts: Mapping[str, Any] | None = None,
    ) -> None:
        del embedding_model, acts  # the semantic entry's options; every entry receives them
        if not name:
            raise ConfigError("a litellm model name is required, e.g. `gpt-4o-mini`")
        check_route(name)
        self.name = name
        self.api_base, self.api_key = api_base, api_key or _local_key(name, api_base)
        self.temperature, self.max_tokens, self.timeout = temperature, max_tokens, timeout
        self.retries, self.backoff, self.max_backoff = retries, backoff, max_backoff
        self.structured = structured
        self.negotiation = Negotiation(name, api_base, structured, one_system)
        """The mode and the system messages the server takes, as the session learns them."""
        # An OpenAI-compatible server of one's own validates messages more strictly than
        # OpenAI: llama-cpp-python answers 500 to a tool-calling assistant message whose
        # content is null or missing, and every such server takes "".
        compatible = api_base and provider_of(name) in OPENAI_COMPATIBLE
        self.call_content: str | None = "" if compatible else None
        self._sleep, self._jitter, self._clock = sleep, jitter, clock
        self.extra = dict(extra or {})
        self._completion = completion
        """Replaces `litellm.completion` (a test seam)."""
        self._deadline: float | None = None
        self._warm = False
        self.calls = 0
        """Requests sent to the provider, retries included."""
        self._lean = lean_client(self) if completion is None else None
        """The thin OpenAI-protocol client the awaited path asks, when it can."""

    def validate(self) -> None:
        """Fail now, not on every turn: a name litellm cannot place, or a missing key."""
        variable = key_variable(self.name, self.api_base)
        if variable and not self.api_key and not env_has(variable):
            raise ConfigError(
                f"model `{self.name}` needs an API key: set {variable} (or pass --api-base)"
            )
        try:
            litellm = load_litellm()
            litellm.get_llm_provider(self.name, api_base=self.api_base)
        except Exception as err:
            hint = "" if "/" in self.name else f" (e.g. `openai/{self.name}` with --api-base URL)"
            raise UnknownModel(
                f"unknown model `{self.name}`: litellm knows no provider for it{hint}"
            ) from err

    def prepare(self, graph: Graph) -> None:
        """Load now what the first turn would (a server, before its first request): the
        modules of litellm's first call, and the modes this model is asked in."""
        del graph
        if self._completion is None:
            warm_up()
            self._warm = True
        self.mode()

    # ----- the session's choices ----------------------------------------------------------

    def mode(self) -> Mode:
        """How the schema is sent now: `json_schema`, `tool` or `json_object`."""
        return self.negotiation.mode()

    def notices(self) -> tuple[str, ...]:
        """What the user should hear once (a mode the server refused); then forgotten."""
        return self.negotiation.notices()

    def begin_turn(self) -> None:
        """Start the turn's deadline: every call and retry until the next one shares it.
        The first turn imports first what litellm's first call would import (seconds)."""
        if not self._warm and self._completion is None:
            warm_up()
        self._warm = True
        self._deadline = self._clock() + self.timeout

    # ----- one request ----------------------------------------------------------------------

    def arguments(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of `litellm.completion` for `request`."""
        mode = self.mode()
        args: dict[str, Any] = {
            "model": self.name,
            "messages": mode_messages(
                mode, request, self.negotiation.one_system, self.call_content
            ),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,  # retries are ours, with backoff we control and can test
            **mode_arguments(mode, request),
            **self.extra,
        }
        if self.api_base:
            args["api_base"] = self.api_base
        if self.api_key:
            args["api_key"] = self.api_key
        return args

    def complete(self, request: LLMRequest) -> str:
        with model_call(self.name, request.kind, request.state, request.messages) as noted:
            before = self.calls
            response = self._send(request)  # in the mode it ends in: a refused one is left
            if self.negotiation.forced_call_ignored(self.mode(), response):  # auto moved on
                response = self._send(request)
            text = answer_text(response, request, self.name, self.max_tokens)
            noted.done(self.mode(), self.calls - before, response, text)
            return text

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]:
        """`_stream`, reported to the watchers of model calls as one call."""
        messages = request.messages
        with model_call(self.name, request.kind, request.state, messages, streamed=True) as noted:
            before = self.calls
            yield from self._stream(request, noted)
            noted.mode, noted.attempts = self.mode(), self.calls - before

    def _stream(self, request: LLMRequest, noted: Noted) -> Iterator[str | Whole]:
        """The answer's text as the provider sends it (`stream=True`), piece by piece: the
        content, or the answer call's arguments (an offered tool's are not the answer),
        then the `Whole` answer as `complete` gives it, built from the chunks by litellm's
        `stream_chunk_builder` (tool calls arrive in deltas). Retried like `complete` until
        the stream opens; a stream that breaks later raises `LLMError`, and so does one
        still running at the turn's deadline or longer than `MAX_STREAMED_CHARS`."""
        deadline = self._turn_deadline()
        response = self._send(request, stream=True, deadline=deadline)
        mode = self.mode()
        gathered = Gathered(self.name, request, content=mode != "tool")
        reading = read_within(response, lambda: deadline - self._clock())
        try:
            for chunk in reading:
                text = gathered.add(chunk)
                if text:
                    yield text
            built = load_litellm().stream_chunk_builder(gathered.chunks)
        except LLMError:
            raise
        except CallTimeout as err:
            raise self._late() from err
        except Exception as err:
            raise failed(self.name, classify(err), 0) from err
        finally:
            reading.close()  # stops the reader, which closes the response
        if built is None:
            raise LLMError(f"model `{self.name}` sent an empty stream")
        if self.negotiation.forced_call_ignored(mode, built):  # auto moved on: ask again
            yield from self._stream(request, noted)
            return
        text = answer_text(built, request, self.name, self.max_tokens)
        noted.done(mode, noted.attempts, built, text)
        yield Whole(text)

    def _turn_deadline(self) -> float:
        return self._deadline or self._clock() + self.timeout

    def _late(self) -> LLMError:
        return LLMError(f"model `{self.name}` gave no answer within {self.timeout:g} s")

    def _send(
        self, request: LLMRequest, *, stream: bool = False, deadline: float | None = None
    ) -> Any:
        """The provider's response, with retries within the turn's deadline."""
        completion = self._completion or load_litellm().completion
        attempts = self._attempts(request, stream, deadline)
        answer: Any = None
        error: Exception | None = None
        while True:
            try:
                step = attempts.send(answer) if error is None else attempts.throw(error)
            except StopIteration as finished:
                return finished.value
            answer, error = None, None
            if isinstance(step, float):
                self._sleep(step)
                continue
            try:
                answer = call_within(completion, step.args, step.seconds)
            except Exception as err:  # judged by the attempts, where they are thrown in
                error = err

    def _attempts(
        self, request: LLMRequest, stream: bool, deadline: float | None
    ) -> Generator[Attempt | float, Any, Any]:
        """The retry policy, as steps: yields each `Attempt` (sent its response, or its
        error thrown in) and each wait between two (seconds), and returns the response;
        the blocking and the awaited call share it."""
        deadline = deadline or self._turn_deadline()
        attempt = 0
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise self._late()
            args = {**self.arguments(request), "timeout": remaining}
            if stream:
                args = {**_streaming(self.name, self.api_base), **args}
            self.calls += 1
            try:
                return (yield Attempt(args, remaining))
            except LLMError:
                raise
            except Exception as err:
                failure = classify(err)
                if self.negotiation.adapt(failure):
                    continue
                delay = self._delay(attempt)
                if not self._retry(failure, attempt, deadline - self._clock() - delay):
                    raise failed(self.name, failure, attempt, self.api_base) from err
            yield float(delay)
            attempt += 1

    def _retry(self, failure: Failure, attempt: int, left_after_wait: float) -> bool:
        if attempt >= self.retries or left_after_wait <= 0:
            return False
        if failure.meaning == "timeout":  # a local server is still generating the answer
            return not is_local(self.name, self.api_base)
        return failure.meaning == "transient"

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with "equal jitter": half fixed, half random."""
        cap = min(self.max_backoff, self.backoff * (2**attempt))
        return float(cap / 2 + self._jitter() * cap / 2)


def _streaming(name: str, api_base: str | None) -> dict[str, Any]:
    """The arguments of a streamed call: an OpenAI-protocol server is asked for its usage,
    as the awaited client asks it, so a streamed call counts the provider's tokens."""
    usage = {"stream_options": {"include_usage": True}} if speaks_openai(name, api_base) else {}
    return {"stream": True, **usage}


def _local_key(name: str, api_base: str | None) -> str | None:
    # A local OpenAI-compatible server (llama.cpp, vLLM, LM Studio) wants no key, but the
    # OpenAI client refuses to send a request without one.
    if api_base and name.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return "no-key"
    return None
