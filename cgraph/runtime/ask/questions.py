"""What a step asks, as one value built by one pure function per kind of step.

A question is the state's own texts (rendered by the `Prompter`) and what the step asks
besides them: the options, the slots, whether the user's first message is still
unanswered, which exits the last turn's clarifying question named. `Ask` holds the latter;
`action_ask` builds an action state's from the session's view alone, so the handlers and
the labelled decision sets (`cgraph.testing.labelled`) ask exactly the same question.
A posed question (`Posed`) is the `Question` with what its prompt is rendered from beside
it (`Prompt`), never inside it: a question is data that any chooser reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgraph.runtime.ports import ExitOption, Question
from cgraph.runtime.routes.slots import slot_schemas, unfilled
from cgraph.runtime.state.view import View
from cgraph.spec.model import ActionState, Graph


@dataclass(frozen=True, slots=True)
class Ask:
    """What a step asks besides the state's texts (each field as `Question` has it)."""

    options: tuple[ExitOption, ...] = ()
    allow_stay: bool = False
    opening: bool = False
    slots: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    collect: tuple[str, ...] = ()
    appends: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    clarifying: tuple[str, ...] = ()
    may_clarify: bool = True
    history: Sequence[Mapping[str, str]] | None = None
    """The messages the prompt shows instead of the session's window (an `extract`)."""
    extra: Mapping[str, Any] | None = None
    """Facts a `start` question weighs (`has_memories`, `memory_count`)."""
    tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prompt:
    """What a question's prompt is rendered from besides the question: read only when a
    model chooser renders it (`cgraph.runtime.ask.requests.Prompter.request`), so a
    chooser that reads the messages itself never pays for a prompt."""

    view: View
    graph: Graph
    texts: Mapping[str, Any]
    """The state's texts, rendered (`requests.state_texts`)."""
    text_key: tuple[Any, ...]
    """The texts as part of the system part's cache key."""
    history: Sequence[Mapping[str, str]] | None = None
    """`Ask.history`: the messages shown instead of the session's window."""


@dataclass(frozen=True, slots=True)
class Posed:
    """A question as a step poses it: the question, which every chooser reads, and what a
    model chooser renders its prompt from. Both are data."""

    question: Question
    prompt: Prompt


def action_ask(
    view: View, graph: Graph, state: ActionState, options: tuple[ExitOption, ...]
) -> Ask:
    """An action state's question at `view`, offering `options`: every slot the answer
    may fill, those the state collects and those still unset, the exits last turn's
    clarifying question named, and whether the state may ask instead of guessing."""
    schemas, collect = slot_schemas(graph, state)
    # The message that entered this sub-graph is read by its first state that talks, for
    # the slots it collects only: it fills what it can (its exits answer the next one).
    filling = view.offered and bool(collect) and not view.opening
    return Ask(
        options=() if filling else options,
        allow_stay=True,
        # No user-facing state before this one: the user's first message is unanswered.
        opening=view.opening or filling,
        slots=schemas,
        collect=collect,
        appends=tuple(n for n in state.append if n in collect),
        missing=unfilled(collect, view.variables),
        clarifying=view.asked,
        may_clarify=graph.clarify_of(state) is not False,
    )
