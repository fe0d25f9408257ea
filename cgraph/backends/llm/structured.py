"""The answer's JSON Schema, sent the way a server takes it.

- `json_schema`: `response_format={"type": "json_schema", ...}` with `strict: true`.
- `tool`: one function whose parameters are the schema, forced with `tool_choice`.
- `json_object`: `response_format={"type": "json_object", "schema": ...}` (llama.cpp and
  vLLM read the schema there; OpenAI ignores it) and the schema in the prompt, for servers
  that only promise *some* JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cgraph.backends.llm.providers import Mode
from cgraph.runtime.ports import LLMRequest

Message = dict[str, Any]


def mode_arguments(mode: Mode, request: LLMRequest) -> dict[str, Any]:
    """The keyword arguments of `litellm.completion` that carry the schema, and the
    graph's tools the model may call before it answers."""
    args = _schema_arguments(mode, request)
    if request.tools and mode == "tool":
        # The answer is one more function; the model must call one of them.
        args["tools"] = [*_offered(request), *args["tools"]]
        args["tool_choice"] = "required"
    elif request.tools:
        args["tools"] = _offered(request)
        args["tool_choice"] = "auto"
    return args


def _offered(request: LLMRequest) -> list[dict[str, Any]]:
    return [{"type": "function", "function": dict(f)} for f in request.tools]


def _schema_arguments(mode: Mode, request: LLMRequest) -> dict[str, Any]:
    if mode == "json_schema":
        schema = {"name": request.schema_name, "schema": request.schema, "strict": True}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    if mode == "tool":
        function = {
            "name": request.schema_name,
            "description": "Give your answer.",
            "parameters": request.schema,
        }
        return {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": request.schema_name}},
        }
    return {"response_format": {"type": "json_object", "schema": request.schema}}


def mode_messages(
    mode: Mode, request: LLMRequest, one_system: bool, call_content: str | None = None
) -> list[Message]:
    """The chat messages: with the schema spelled out in JSON mode, and every system
    message folded into the first when the chat template allows only a leading one.
    `call_content` is what an assistant message that calls tools carries as its content."""
    messages: list[Message] = [provider_message(m, call_content) for m in request.messages]
    if mode == "json_object":
        messages.append({"role": "system", "content": schema_instruction(request)})
    return single_system(messages) if one_system else messages


def provider_message(message: Mapping[str, str], call_content: str | None = None) -> Message:
    """A chat message for the provider: an assistant's tool calls, kept as JSON text in the
    request, become OpenAI's `tool_calls` list, beside `call_content` (OpenAI's layout has
    null; litellm then drops the key)."""
    if "tool_calls" not in message:
        return dict(message)
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for c in json.loads(message["tool_calls"])
    ]
    return {**message, "content": message.get("content") or call_content, "tool_calls": calls}


def schema_instruction(request: LLMRequest) -> str:
    schema = json.dumps(request.schema, ensure_ascii=False, separators=(",", ":"))
    return f"Answer with one JSON object, and nothing else, that follows this JSON Schema: {schema}"


def single_system(messages: list[Message]) -> list[Message]:
    """One leading system message holding every system text, in order; the rest as sent."""
    system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
    others = [m for m in messages if m.get("role") != "system"]
    if not system:
        return others
    return [{"role": "system", "content": "\n\n".join(system)}, *others]
