"""Tools the model calls from an action state: offered next to the answer, validated, run,
fed back, bounded.

A request that offers tools (`LLMRequest.tools`) may be answered with tool calls instead of
an answer, written `{"tool_calls": [{"id": ..., "name": ..., "arguments": {...}}]}` (the
litellm backend turns a provider's calls into that; a script writes it as is). Each call is
checked — offered here, arguments valid against the tool's `parameters` — then run with the
tool's timeout and an idempotency key, several at once when the model asks for several.
Results (or errors) go back as `tool` messages and the model is asked again, until it
answers. Bounds: `limits.max_tool_calls` per turn, and one refused call (undeclared tool,
invalid arguments): after a second the tools are withdrawn and the model must answer.
Every call is a `tool_call` event (`by: model`) with its arguments, result or error, and
duration.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from cgraph.errors import CgraphError, ToolError
from cgraph.runtime.ask.answers import ToolCall, tool_calls_of
from cgraph.runtime.ask.choosing import Decided, Prompts, decide
from cgraph.runtime.ask.questions import Posed
from cgraph.runtime.needs import Complete, Offload, Steps
from cgraph.runtime.ports import ChatModel, ExitChooser, LLMRequest
from cgraph.runtime.state.outcomes import Emit
from cgraph.runtime.state.snapshot import jsonable
from cgraph.runtime.tools.arguments import argument_errors
from cgraph.spec.model import Graph, Tool
from cgraph.spec.trust import Trust

MAX_REFUSED = 1
"""Refused calls the model is told about before the tools are withdrawn."""
RESULT_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Ran:
    """A call's outcome: the event for the log and the text the model reads back."""

    call: ToolCall
    event: dict[str, Any]
    content: str
    refused: bool = False


@dataclass(frozen=True, slots=True)
class Calling:
    """What the loop needs besides the model: the graph's tools, keys, the budget."""

    graph: Graph
    folder: Path
    here: str
    key: str
    """The step's idempotency key; a call's key adds its position in the step."""
    names: tuple[str, ...]
    """The tools the state offers."""
    budget: int
    """Calls left in this turn (`limits.max_tool_calls` less the calls already made)."""
    journal: Journal
    runner: ToolCaller
    """Runs a call as a side-effect state's call runs (`cgraph.runtime.tools.runner`)."""


def ask_with_tools(
    chooser: ExitChooser, posed: Posed, prompts: Prompts, calling: Calling
) -> Steps[tuple[Decided, tuple[Emit, ...]]]:
    """`cgraph.runtime.ask.choosing.decide`, the model's first attempt a conversation with
    the tools the question offers (`Question.tools`); the calls' events come first (they
    happened before the answer)."""
    events: list[Emit] = []
    talk = partial(converse, calling=calling, events=events)
    decided = yield from decide(chooser, posed, prompts, converse=talk)
    return decided, tuple(events)


def converse(
    model: ChatModel, request: LLMRequest, calling: Calling, events: list[Emit]
) -> Steps[tuple[LLMRequest, str]]:
    """Ask until the model answers instead of calling tools; every call's event is added to
    `events` as it happens (an `LLMError` leaves them there). Returns the request as it
    finally stood, the calls and results in its messages, and the answer."""
    current, made, refused = request, 0, 0
    while True:
        raw = yield Complete(model, current)
        calls = tool_calls_of(raw) if current.tools else ()
        if not calls:
            return current, raw
        ran = yield from run_calls(calls, calling, made)
        made += len(calls)
        refused += sum(r.refused for r in ran)
        events += [Emit("tool_call", r.event) for r in ran]
        withdraw = made >= calling.budget or refused > MAX_REFUSED
        current = _fed_back(current, calls, ran, withdraw)


def run_calls(calls: Sequence[ToolCall], calling: Calling, made: int) -> Steps[list[Ran]]:
    """Run the calls (in parallel when several); those past the budget are not run."""
    left = max(calling.budget - made, 0)
    allowed = calls[:left]
    keys = [f"{calling.key}:{made + index + 1}" for index in range(len(calls))]
    prepared = [_prepare(call, calling, key) for call, key in zip(allowed, keys, strict=False)]
    for ready in prepared:
        if isinstance(ready, tuple):
            intent = Emit("tool_call", {**ready[2], "status": "started"})
            yield Offload(partial(calling.journal.write_ahead, intent), "store")
    done: list[Ran] = yield Offload(partial(_run_all, prepared, calling), "tool")
    limit = calling.graph.limits.max_tool_calls
    over = [
        _refusal(call, calling, key, f"not run: the limit of {limit} tool calls a turn is reached")
        for call, key in zip(calls[left:], keys[left:], strict=False)
    ]
    return done + over


Prepared = tuple[ToolCall, Tool, dict[str, Any]] | Ran


def _prepare(call: ToolCall, calling: Calling, key: str) -> Prepared:
    """The call checked before it runs: the tool offered, the arguments valid."""
    tool = calling.graph.tool(call.name)
    names = calling.names
    if tool is None or call.name not in names:
        return _refusal(
            call, calling, key, f"there is no tool `{call.name}` here; tools: {', '.join(names)}"
        )
    if not isinstance(call.arguments, dict):
        return _refusal(call, calling, key, "the arguments are not a JSON object")
    errors = argument_errors(tool.parameters, call.arguments)
    if errors:
        return _refusal(call, calling, key, "invalid arguments: " + "; ".join(errors))
    return call, tool, _record(call, calling, key)


def _record(call: ToolCall, calling: Calling, key: str) -> dict[str, Any]:
    return {
        "state": calling.here,
        "tool": call.name,
        "key": key,
        "by": "model",
        "call_id": call.id,
        "arguments": jsonable(call.arguments),
    }


def _refusal(call: ToolCall, calling: Calling, key: str, error: str) -> Ran:
    event = {**_record(call, calling, key), "status": "refused", "error": error, "duration": 0.0}
    return Ran(call, event, json.dumps({"error": error}), refused=True)


def _run_all(prepared: Sequence[Prepared], calling: Calling) -> list[Ran]:
    with ThreadPoolExecutor(max_workers=max(len(prepared), 1)) as pool:
        return list(pool.map(lambda ready: _run(ready, calling), prepared))


def _run(ready: Prepared, calling: Calling) -> Ran:
    if isinstance(ready, Ran):
        return ready
    call, tool, record = ready
    began = time.monotonic()
    try:
        trust = calling.graph.trust  # a sub-graph holds its root's
        result = calling.runner.call(tool, calling.folder, call.arguments, record["key"], trust)
    except (ToolError, CgraphError) as err:
        took = round(time.monotonic() - began, 3)
        event = {**record, "status": "failed", "error": err.message, "duration": took}
        return Ran(call, event, json.dumps({"error": err.message}))
    took = round(time.monotonic() - began, 3)
    value = jsonable(result)
    event = {**record, "status": "done", "result": value, "duration": took}
    return Ran(call, event, json.dumps({"result": value}, ensure_ascii=False)[:RESULT_CHARS])


def _fed_back(
    request: LLMRequest, calls: Sequence[ToolCall], ran: Sequence[Ran], withdraw: bool
) -> LLMRequest:
    """The request with the model's calls and their results appended (OpenAI's layout)."""
    asked = [{"id": c.id, "name": c.name, "arguments": _text(c.arguments)} for c in calls]
    messages: list[dict[str, str]] = [
        {"role": "assistant", "content": "", "tool_calls": json.dumps(asked)}
    ]
    messages += [
        {"role": "tool", "tool_call_id": r.call.id, "name": r.call.name, "content": r.content}
        for r in ran
    ]
    if withdraw:
        messages.append(
            {
                "role": "user",
                "content": "[cgraph] No more tool calls this turn. Answer now with one JSON "
                "object that follows the schema, using the results above.",
            }
        )
    tools = () if withdraw else request.tools
    return replace(request, messages=request.messages + tuple(messages), tools=tools)


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def calls_made(events: Sequence[Mapping[str, Any]]) -> int:
    """Model tool calls among a turn's `tool_call` event data (intents not counted)."""
    return sum(1 for e in events if e.get("by") == "model" and e.get("status") != "started")


class Journal(Protocol):
    """Where a call's intent is written before the call (`cgraph.runtime.log.events.EventLog`):
    at once, so a crash during the call leaves a record that it was attempted."""

    def write_ahead(self, intent: Emit) -> None: ...


class ToolCaller(Protocol):
    """Runs a declared tool (`cgraph.runtime.tools.runner.ToolRunner`)."""

    def call(
        self,
        tool: Tool,
        folder: Path | None,
        arguments: Mapping[str, Any],
        key: str,
        trust: Trust | None = None,
    ) -> Any: ...
