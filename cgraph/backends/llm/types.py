"""What the engine asks of a language model: the request, and the protocol a backend follows.

A backend receives an `LLMRequest` — the rendered prompt *and* a structured view of the
same question — and returns the raw text of its answer. The engine validates that text
itself, so a backend can never make a transition the graph does not declare.

Answers are JSON objects:
- action:     {"exit": "<exit id>" | "stay", "reason": str, "reply": str}
- decision / start / graph: {"exit": "<exit id>", "reason": str}
- reflection: {"note": str, "exit": "<exit id>", "reason": str}
- extract:    {"memories": [{"tier": "personal"|"project"|"task", "text": str}]}
- summary:    {"summary": str} (a backend with `writes_summaries = False` is never asked)
A backend may add "scores": {exit id: float} to explain its choice (shown by `/why`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

RequestKind = Literal["action", "decision", "reflection", "start", "graph", "extract", "summary"]
STAY = "stay"


@dataclass(frozen=True, slots=True)
class ExitOption:
    """One exit as the model sees it: `id` is what it must answer."""

    id: str
    description: str
    target: str
    examples: tuple[str, ...] = ()
    anywhere: bool = False
    """A global exit: it holds in every state (an emergency, "cancel"); listed first."""


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One question to a model."""

    kind: RequestKind
    messages: tuple[dict[str, str], ...]
    """The rendered prompt, as chat messages (system first), static parts first."""
    schema: dict[str, Any]
    """JSON Schema of the answer; the exit field is an enum of the exit ids."""
    schema_name: str
    state: str
    """The qualified id of the state asking (`sub.yaml#triage` inside a sub-graph)."""
    objective: str = ""
    options: tuple[ExitOption, ...] = ()
    allow_stay: bool = False
    user_messages: tuple[str, ...] = ()
    """Recent user messages, newest last."""
    stay_prototypes: tuple[str, ...] = ()
    """Texts that describe staying: the state's objective, actions and intra-state guidelines."""
    authored_reply: str = ""
    """The state's authored text (`say:` rendered, or its actions) for models that cannot write."""
    entered_this_turn: bool = False
    """True when the newest user message already moved the conversation into this state."""
    opening: bool = False
    """The newest user message opens the conversation and no state has answered it yet: it
    is judged against this state's exits although the state was entered this turn."""
    tools: tuple[dict[str, Any], ...] = ()
    """Functions the model may call before it answers (`name`, `description`, `parameters`).
    A backend answers with `{"tool_calls": [{"id", "name", "arguments"}]}` to call them; in
    `messages`, an assistant message's `tool_calls` is that list as JSON text, and each
    result is a `tool` message with its `tool_call_id`."""
    graph: str = ""
    """The name of the graph the asking state belongs to."""
    turn: int = 0
    annotations: tuple[str, ...] = ()
    """The session's findings so far (annotation tags), for backends that weigh evidence."""
    has_memories: bool = False
    """For `start` requests: whether the user has memories."""
    memory_count: int = 0
    slots: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Slots the answer may fill (`"slots": {name: value or null}`), as nullable JSON Schemas."""
    collect: tuple[str, ...] = ()
    """The slots this state asks for (the others are filled only when the user volunteers them)."""
    rejected: str = ""
    """On a re-ask: why the previous answer was refused (the last message quotes it too)."""

    @property
    def exit_ids(self) -> tuple[str, ...]:
        """Every answer `exit` may take: the options' ids, then `stay` when allowed."""
        return exit_ids(self.options, self.allow_stay)


def exit_ids(options: Sequence[ExitOption], allow_stay: bool) -> tuple[str, ...]:
    """The ids a model may answer with; the schema's enum and the validator share it."""
    return tuple(o.id for o in options) + ((STAY,) if allow_stay else ())


@dataclass(frozen=True, slots=True)
class Whole:
    """The last item of a stream: the answer as `complete` would have returned it, when it
    is not just the pieces joined (a round of tool calls, assembled from their deltas)."""

    text: str


@runtime_checkable
class ChatModel(Protocol):
    """A language model backend.

    A backend may also define `begin_turn()` (called when a turn or its memory extraction
    starts: where a turn's deadline begins) and `notices()` (things the user should hear
    once, such as a structured-output mode the server refused; drained after each call),
    and `stream(request)`: the answer's text in pieces as the model writes it (the content,
    or the answer function's arguments; never an offered tool's), optionally ended by a
    `Whole` that stands for the complete answer.
    """

    name: str

    def complete(self, request: LLMRequest) -> str:
        """Answer `request` with raw text (JSON expected). Raise `LLMError` on failure."""
        ...


def begin_turn(model: ChatModel) -> None:
    """Tell `model` a turn starts, if it keeps a per-turn deadline."""
    hook = getattr(model, "begin_turn", None)
    if callable(hook):
        hook()


def notices(model: ChatModel) -> tuple[str, ...]:
    """What `model` has to say since it was last asked (empty for most backends)."""
    drain = getattr(model, "notices", None)
    return tuple(str(n) for n in drain()) if callable(drain) else ()
