"""A deterministic model for tests: it answers from a script keyed by state.

    model = ScriptedModel({
        "welcome": [{"exit": "stay", "reason": "greeting", "reply": "Hi!"}],
        "triage": ["not json", {"exit": "urgent", "reason": "chest pain"}],
        "extract": [{"memories": []}],
    })

A script maps a key to one answer or a list of answers consumed in order. The key is the
asking state's qualified id (its bare id also matches; `"*"` answers any state), or for
`start` requests `start` (or `file.yaml#START` in a sub-graph), for memory extraction
`extract` and for history summaries `summary` (without it cgraph writes them offline).
An answer is a dict (sent as JSON), a string (sent as is — for malformed output), an
exception (raised), a callable taking the `LLMRequest`, or `{"sleep": seconds, "then":
answer}`. A single (non-list) answer repeats forever. `extract` requests with no script
answer `{"memories": []}`.

`scripted:FILE` (`cgraph.runtime.ports.resolve`) loads a script from YAML or JSON; there an
exception is written `{"raise": "message"}` (an `LLMError`). For tests only: never a default.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from cgraph.errors import CgraphError, LLMError
from cgraph.observe import model_call
from cgraph.runtime.ports import Capabilities, LLMRequest, Quiet, Whole
from cgraph.spec.names import bare
from cgraph.spec.yaml_syntax import explain

ANY = "*"


class ScriptError(CgraphError):
    """The script has no answer for a request: the test expected fewer model calls."""


class ScriptedModel(Quiet):
    """Answers from a script; records every request for assertions."""

    def __init__(
        self,
        script: Mapping[str, Any] | str | Path | None = None,
        *,
        name: str = "scripted",
        sleep: Callable[[float], None] = time.sleep,
        chunk: int = 7,
        calls_tools: bool = True,
        **_options: Any,
    ) -> None:
        self.chunk = chunk
        self._calls_tools = calls_tools
        if isinstance(script, str | Path):
            name = f"scripted:{script}"
            script = load_script(script)
        self.name = name
        self.requests: list[LLMRequest] = []
        self._sleep = sleep
        self._queues: dict[str, list[Any]] = {}
        self._repeat: dict[str, Any] = {}
        for key, value in (script or {}).items():
            if isinstance(value, list):
                self._queues[key] = list(value)
            else:
                self._repeat[key] = value

    @property
    def capabilities(self) -> Capabilities:
        """It streams (in pieces of `chunk` characters); only a script with a `summary` key
        writes summaries (else cgraph extracts them); `calls_tools=False` plays a model
        that calls none."""
        summaries = "summary" in self._queues or "summary" in self._repeat
        return Capabilities(
            streams=True, calls_tools=self._calls_tools, writes_prose=summaries, awaits=True
        )

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]:
        """The answer `complete` gives, in pieces of `chunk` characters (a streaming test)."""
        text = self.complete(request)
        for start in range(0, len(text), self.chunk):
            yield text[start : start + self.chunk]

    def complete(self, request: LLMRequest) -> str:
        with model_call(self.name, request.kind, request.state, request.messages) as noted:
            delays, answer = self._scripted(request)
            for seconds in delays:
                self._sleep(seconds)
            text = self._given(answer, request)
            noted.done("", 1, None, text)
            return text

    async def acomplete(self, request: LLMRequest) -> str:
        """`complete`, awaited: a scripted `sleep` waits on the event loop (the injected
        `sleep`, when one is, is called as it is)."""
        with model_call(self.name, request.kind, request.state, request.messages) as noted:
            delays, answer = self._scripted(request)
            for seconds in delays:
                if self._sleep is time.sleep:
                    await asyncio.sleep(seconds)
                else:
                    self._sleep(seconds)
            text = self._given(answer, request)
            noted.done("", 1, None, text)
            return text

    async def astream(self, request: LLMRequest) -> AsyncIterator[str | Whole]:
        """`stream`, awaited."""
        text = await self.acomplete(request)
        for start in range(0, len(text), self.chunk):
            yield text[start : start + self.chunk]

    def _scripted(self, request: LLMRequest) -> tuple[list[float], Any]:
        """The waits before the next answer, and the answer."""
        self.requests.append(request)
        answer = self._next(request)
        delays: list[float] = []
        while isinstance(answer, dict) and "sleep" in answer and "then" in answer:
            delays.append(float(answer["sleep"]))
            answer = answer["then"]
        return delays, answer

    def _given(self, answer: Any, request: LLMRequest) -> str:
        if callable(answer) and not isinstance(answer, type):
            answer = answer(request)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, dict) and set(answer) == {"raise"}:
            raise LLMError(str(answer["raise"]))
        return answer if isinstance(answer, str) else json.dumps(answer)

    def _next(self, request: LLMRequest) -> Any:
        for key in _keys(request):
            queue = self._queues.get(key)
            if queue:
                return queue.pop(0)
            if key in self._repeat:
                return self._repeat[key]
        if request.kind == "extract":
            return {"memories": []}
        raise ScriptError(
            f"the script has no answer left for {request.kind} request of `{request.state}` "
            f"(keys tried: {', '.join(_keys(request))})"
        )

    # ----- assertions ---------------------------------------------------------------------

    def requests_for(self, state: str) -> list[LLMRequest]:
        return [r for r in self.requests if r.state == state or bare(r.state) == state]

    def exit_enum(self, state: str) -> list[str]:
        """The exit enum of the last structured-output schema sent for `state`."""
        found = self.requests_for(state)
        if not found:
            raise AssertionError(f"no request was made for `{state}`")
        properties = found[-1].schema["properties"]
        return list(properties["exit"]["enum"])

    def assert_exit_enum(self, state: str, expected: list[str]) -> None:
        actual = self.exit_enum(state)
        if sorted(actual) != sorted(expected):
            raise AssertionError(f"exit enum of `{state}` is {actual}, expected {expected}")

    def unused(self) -> dict[str, int]:
        """Answers left in the script, by key (a test may assert it is empty)."""
        return {k: len(v) for k, v in self._queues.items() if v}


def _keys(request: LLMRequest) -> list[str]:
    if request.kind in ("extract", "summary"):
        return [request.kind]
    if request.kind == "start":
        return list(dict.fromkeys(["start", request.state]))
    return list(dict.fromkeys([request.state, bare(request.state), ANY]))


def load_script(path: str | Path) -> dict[str, Any]:
    """A script file: YAML or JSON mapping of keys to answers."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or err
        raise CgraphError(f"cannot read model script {file}: {reason}") from err
    try:  # a JSON script is YAML too; json reads it a hundred times faster
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as err:
        raise CgraphError(f"model script {file}:{err.lineno}:{err.colno}: {err.msg}") from err
    except yaml.MarkedYAMLError as err:
        found = explain(err, text)
        where = f"{file}:{found.line}:{found.column}"
        raise CgraphError(f"model script {where}: {found.message} ({found.hint})") from err
    except yaml.YAMLError as err:
        raise CgraphError(f"cannot read model script {file}: {err}") from err
    if not isinstance(data, dict):
        raise CgraphError(f"model script {file} must be a mapping of state ids to answers")
    return data
