"""litellm's model, awaited: the async driver's path to a provider (`AsyncModel`).

The same requests, retry policy (`LiteLLMModel._attempts`, shared as steps), deadline,
mode negotiation and answer reading (`chunks.Gathered`, `responses`) as the blocking
path; only the waiting differs. A provider that speaks the OpenAI chat protocol is asked
through the thin `openai_http` client (a fraction of litellm's CPU a call); any other
through `litellm.acompletion`. A stream is read chunk by chunk, each read bounded by what
is left of the turn's deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from cgraph.backends.llm.chunks import Gathered, failed
from cgraph.backends.llm.deadline import CallTimeout
from cgraph.backends.llm.failures import classify
from cgraph.backends.llm.openai_http import OpenAIHTTP, built, speaks_openai
from cgraph.backends.llm.providers import load_litellm
from cgraph.backends.llm.responses import answer_text
from cgraph.errors import LLMError
from cgraph.observe import model_call
from cgraph.runtime.ports import LLMRequest, Whole


def lean_client(model: Any) -> OpenAIHTTP | None:
    """The thin client for `model` when its server speaks OpenAI's protocol and nothing
    litellm-specific is asked (`extra` arguments, a replaced `completion`)."""
    if model.extra or not speaks_openai(model.name, model.api_base):
        return None
    import os

    key = model.api_key or os.environ.get("OPENAI_API_KEY")
    return OpenAIHTTP(model.name, model.api_base, key)


class Awaited:
    """`acomplete` and `astream` for `LiteLLMModel` (mixed in; `self` is that model: its
    attempts, mode, deadline and answer reading)."""

    async def acomplete(self: Any, request: LLMRequest) -> str:
        with model_call(self.name, request.kind, request.state, request.messages) as noted:
            before = self.calls
            response = await self._asend(request)
            if self.negotiation.forced_call_ignored(self.mode(), response):  # auto moved on
                response = await self._asend(request)
            text = answer_text(response, request, self.name, self.max_tokens)
            noted.done(self.mode(), self.calls - before, response, text)
            return text

    async def astream(self: Any, request: LLMRequest) -> AsyncIterator[str | Whole]:
        """`stream`, awaited, reported to the watchers of model calls as one call."""
        messages = request.messages
        with model_call(self.name, request.kind, request.state, messages, streamed=True) as noted:
            before = self.calls
            async for chunk_text in self._astream(request, noted):
                yield chunk_text
            noted.mode, noted.attempts = self.mode(), self.calls - before

    async def _astream(self: Any, request: LLMRequest, noted: Any) -> AsyncIterator[str | Whole]:
        """The pieces as they come, then the `Whole` answer."""
        deadline = self._turn_deadline()
        response = await self._asend(request, stream=True, deadline=deadline)
        mode = self.mode()
        gathered = Gathered(self.name, request, content=mode != "tool")
        reading = response.__aiter__()
        try:
            while True:
                left = deadline - self._clock()
                if left <= 0:
                    raise self._late()
                try:
                    chunk = await asyncio.wait_for(reading.__anext__(), left)
                except StopAsyncIteration:
                    break
                except TimeoutError as err:
                    raise self._late() from err
                text = gathered.add(chunk)
                if text:
                    yield text
            whole = self._chunks_built(gathered.chunks)
        except LLMError:
            raise
        except Exception as err:
            raise failed(self.name, classify(err), 0) from err
        finally:
            close = getattr(reading, "aclose", None)
            if close is not None:
                await close()
        if whole is None:
            raise LLMError(f"model `{self.name}` sent an empty stream")
        if self.negotiation.forced_call_ignored(mode, whole):  # auto moved on: ask again
            async for again in self._astream(request, noted):
                yield again
            return
        text = answer_text(whole, request, self.name, self.max_tokens)
        noted.done(mode, noted.attempts, whole, text)
        yield Whole(text)

    def _chunks_built(self: Any, chunks: list[Any]) -> Any:
        if self._lean is not None:
            return built(chunks) if chunks else None
        return load_litellm().stream_chunk_builder(chunks)

    async def _asend(
        self: Any,
        request: LLMRequest,
        *,
        stream: bool = False,
        deadline: float | None = None,
    ) -> Any:
        """`_send`, awaited: the same attempts, each bounded by its seconds."""
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
                await _pause(self._sleep, step)
                continue
            try:
                answer = await asyncio.wait_for(self._acall(step.args, stream), step.seconds)
            except TimeoutError:
                error = CallTimeout(f"no answer within {step.seconds:.1f} s")
            except Exception as err:  # judged by the attempts, where they are thrown in
                error = err

    async def _acall(self: Any, args: dict[str, Any], stream: bool) -> Any:
        if self._completion is not None:  # a test's stand-in for litellm: it blocks
            return await asyncio.to_thread(lambda: self._completion(**args))
        if self._lean is not None:
            return await (self._lean.open_stream(args) if stream else self._lean.create(args))
        return await load_litellm().acompletion(**args)


async def _pause(sleep: Any, seconds: float) -> None:
    """The wait between two attempts: on the loop, unless a test injected its own sleep."""
    if sleep is time.sleep:
        await asyncio.sleep(seconds)
    else:
        sleep(seconds)
