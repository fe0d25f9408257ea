"""The conversation history a prompt shows: a token-bounded window, a running summary of
the turns that left it, and the per-state context strategies (`keep`, `reset`,
`reset_with_summary`) applied when a state is entered.

With `limits.history.strategy: summarize`, messages leaving the window are folded into a
running summary, written by the model (a `summary` request) or, when the model writes no
prose (the offline semantic mode) or fails, extracted from the user's own statements.
Every new summary is a `summary` event and lives in the snapshot, so a resumed or replayed
session shows the model exactly the summary it was shown before; nothing is rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cgraph.errors import LLMError
from cgraph.runtime.needs import Complete, Steps
from cgraph.runtime.ports import ChatModel, LLMRequest, Summariser
from cgraph.runtime.state.outcomes import Effect, Effects, Emit, SetMarks
from cgraph.runtime.state.snapshot import HistoryMarks

if TYPE_CHECKING:
    from cgraph.runtime.ask.requests import Prompter

Message = dict[str, str]
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}
SUMMARY_INSTRUCTIONS = (
    "You keep the running summary of a conversation between a user and an assistant. "
    "Rewrite the summary so that it also covers the new messages. {keep} "
    "Write at most {words} words, in the third person. "
    'Answer with one JSON object: {{"summary": "..."}}.'
)
SUMMARY_KEEPS = (
    "Keep every fact the user gave about themselves (name, preferences, situation), "
    "decisions and open requests; drop greetings and small talk."
)
"""What a summary keeps, unless the state entered says (`summary_prompt`)."""


def before_step(
    prompter: Prompter,
    marks: HistoryMarks,
    context: str | None,
    model: ChatModel | None,
    here: str,
    summariser: Summariser | None = None,
    keep: str | None = None,
) -> Steps[Effects]:
    """Before a step: the `context:` strategy of the state just entered, then (with
    `strategy: summarize`) the messages about to leave the window folded into the summary,
    then the window's start moved; the new marks as a `SetMarks` effect (none when nothing
    changed), so the step's prompts show them. `summariser` writes the summary when the
    model writes none (None: the summary stays as it was); `keep` is the entered state's
    `summary_prompt`."""
    effects: list[Effect] = []
    start = marks
    if context is not None:
        marks, done = yield from apply_context(
            context, prompter, marks, model, here, summariser, keep
        )
        effects += done
    marks, done = yield from keep_summary(prompter, marks, model, here, summariser)
    effects += done
    moved = prompter.window_start(marks)
    if moved != marks.history_start:
        marks = marks._replace(history_start=moved)
    if marks != start or context is not None:
        effects.append(SetMarks(marks))
    return tuple(effects)


def keep_summary(
    prompter: Prompter,
    marks: HistoryMarks,
    model: ChatModel | None,
    here: str,
    summariser: Summariser | None = None,
) -> Steps[tuple[HistoryMarks, Effects]]:
    """With `strategy: summarize`, the messages about to leave the window folded into the
    summary."""
    limits = prompter.root.limits
    if not limits.summarizes():
        return marks, ()
    start = prompter.window_start(marks)
    if start <= marks.summary_upto:
        return marks, ()
    return (yield from fold(prompter, marks, model, here, start, "window", summariser))


def apply_context(
    strategy: str,
    prompter: Prompter,
    marks: HistoryMarks,
    model: ChatModel | None,
    here: str,
    summariser: Summariser | None = None,
    keep: str | None = None,
) -> Steps[tuple[HistoryMarks, Effects]]:
    """A state's `context` strategy, on entry: the window restarts at the newest user message
    (`reset` drops the summary; `reset_with_summary` first folds what came before into it,
    keeping what the state's `summary_prompt` says)."""
    if strategy == "keep":
        return marks, ()
    cut = _newest_user(prompter.transcript)
    effects: Effects = ()
    if strategy == "reset_with_summary" and cut > marks.summary_upto:
        marks, effects = yield from fold(
            prompter, marks, model, here, cut, strategy, summariser, keep
        )
    elif strategy == "reset" and (marks.summary or marks.summary_upto != cut):
        marks = marks._replace(summary="", summary_upto=cut)
        data = {"state": here, "text": "", "upto": cut, "reason": strategy, "writer": "none"}
        effects = (Emit("summary", data),)
    return marks._replace(context_start=cut, history_start=cut), effects


def _newest_user(transcript: Sequence[Message]) -> int:
    for index in range(len(transcript) - 1, -1, -1):
        if transcript[index]["role"] == "user":
            return index
    return len(transcript)


def fold(
    prompter: Prompter,
    marks: HistoryMarks,
    model: ChatModel | None,
    here: str,
    upto: int,
    reason: str,
    summariser: Summariser | None = None,
    keep: str | None = None,
) -> Steps[tuple[HistoryMarks, Effects]]:
    """Fold the messages between the summary's end and `upto` into the summary (a model
    writing it is told what to `keep`, else `SUMMARY_KEEPS`)."""
    older = prompter.transcript[marks.summary_upto : upto]
    budget = prompter.root.limits.history_budget() // 4
    failures: list[Emit] = []
    asked = summary_request(here, marks.summary, older, budget, keep)
    text, writer = yield from _written(model, here, asked, failures)
    if text is None and summariser is not None:
        text, writer = summariser.summarise(marks.summary, older, budget), summariser.name
    if text is None:
        text, writer = marks.summary, "none"
    data = {"state": here, "text": text, "upto": upto, "reason": reason, "writer": writer}
    return marks._replace(summary=text, summary_upto=upto), (*failures, Emit("summary", data))


def _written(
    model: ChatModel | None, here: str, request: LLMRequest, failures: list[Emit]
) -> Steps[tuple[str | None, str]]:
    """The model's summary, or None when it writes none (offline) or fails."""
    if model is None or not model.capabilities.writes_prose:
        return None, ""
    try:
        raw = yield Complete(model, request)
    except LLMError as err:
        failures.append(_failure(here, err.message))
        return None, ""
    try:
        text = json.loads(raw)["summary"]
    except (ValueError, TypeError, KeyError) as err:
        failures.append(_failure(here, f'the summary is not {{"summary": text}}: {err}'))
        return None, ""
    if not isinstance(text, str) or not text.strip():
        failures.append(_failure(here, "the summary is empty"))
        return None, ""
    return text.strip(), model.name


def _failure(here: str, error: str) -> Emit:
    return Emit("llm_error", {"state": here, "kind": "summary", "error": error})


def summary_request(
    state: str, previous: str, older: Sequence[Message], budget: int, keep: str | None = None
) -> LLMRequest:
    lines = [f"{m['role']}: {m['content']}" for m in older if m["role"] in ("user", "assistant")]
    content = f"Summary so far:\n{previous or '(none)'}\n\nNew messages:\n" + "\n".join(lines)
    words = max(budget * 3 // 4, 40)
    instructions = SUMMARY_INSTRUCTIONS.format(keep=keep or SUMMARY_KEEPS, words=words)
    return LLMRequest(
        kind="summary",
        messages=(
            {"role": "system", "content": instructions},
            {"role": "user", "content": content},
        ),
        schema=SUMMARY_SCHEMA,
        schema_name="cgraph_summary",
        state=state,
    )
