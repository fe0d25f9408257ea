"""The offline chooser's answer to one message at an action state, for tests."""

from __future__ import annotations

import json

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import ExitOption, LLMRequest


def action_request(message: str, options: tuple[ExitOption, ...], asked: str) -> LLMRequest:
    """The request of an action state whose one action is `asked`, after `message`."""
    return LLMRequest(
        kind="action",
        messages=(),
        schema={},
        schema_name="x",
        state="here",
        objective=asked,
        options=options,
        allow_stay=True,
        stay_prototypes=(asked,),
        authored_reply=asked,
        user_messages=(message,),
    )


def chosen(message: str, *options: ExitOption, asked: str) -> str:
    """The exit the chooser (real MiniLM) takes for `message`."""
    model = SemanticModel(embedder=shared_embedder())
    return str(json.loads(model.complete(action_request(message, options, asked)))["exit"])
