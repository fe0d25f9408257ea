"""The offline chooser's answer to one message at an action state, for tests."""

from __future__ import annotations

from typing import Any

from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import ExitOption, Question


def action_request(message: str, options: tuple[ExitOption, ...], asked: str) -> Question:
    """The request of an action state whose one action is `asked`, after `message`."""
    return Question(
        kind="action",
        state="here",
        objective=asked,
        options=options,
        allow_stay=True,
        stay_prototypes=(asked,),
        authored_reply=asked,
        user_messages=(message,),
    )


def answer_of(model: SemanticModel, question: Question) -> dict[str, Any]:
    """The chooser's choice as the answer a model would give (`exit`, `reason`, `reply`,
    `scores`, `slots`, `note`), for tests that read its parts."""
    choice = model.choose(question)
    slots = {name: choice.slots.get(name) for name in question.slots}
    return {
        "exit": choice.exit,
        "reason": str(choice.reason),
        "reply": choice.reply,
        "scores": dict(choice.confidence),
        "slots": slots,
        "note": choice.note,
    }


def chosen(message: str, *options: ExitOption, asked: str) -> str:
    """The exit the chooser (real MiniLM) takes for `message`."""
    model = SemanticModel(embedder=shared_embedder())
    return str(answer_of(model, action_request(message, options, asked))["exit"])
