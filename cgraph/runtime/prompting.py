"""Building the request of one question: texts rendered, prompt laid out, history windowed.

A `Prompter` belongs to one session. It keeps what is worth keeping between requests: the
rendered system parts (`cgraph.runtime.prompts`), each graph's topology text, and the
history window with its token estimates. It reads the transcript the event log keeps and
never changes the session.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from jinja2 import TemplateError as JinjaError

from cgraph.backends.llm.types import ExitOption, LLMRequest, RequestKind, exit_ids
from cgraph.errors import CgraphError, RenderError
from cgraph.runtime.answers import answer_schema
from cgraph.runtime.context import View, template_context
from cgraph.runtime.graphs import topology_text
from cgraph.runtime.prompts import (
    estimate_tokens,
    history_start,
    render_messages,
    summary_message,
)
from cgraph.runtime.snapshot import HistoryMarks
from cgraph.spec.model import (
    PROMPT_TEXT,
    ActionState,
    AnyState,
    DecisionState,
    Graph,
    ReflectionState,
)
from cgraph.spec.templating import is_template, render_text

TOPOLOGY_KINDS = frozenset({"decision", "reflection", "start", "graph"})
RECENT_USER_MESSAGES = 3
TEXT_FIELDS = tuple(
    dict.fromkeys(
        f.name
        for kind in (ActionState, DecisionState, ReflectionState)
        for f in fields(kind)
        if f.metadata.get(PROMPT_TEXT)
    )
)
"""The lists of texts a state shows the model, by field metadata on the model."""

Messages = list[dict[str, str]]


def render_safe(source: str, context: Mapping[str, Any]) -> str:
    """A designer's text template, or its raw text if it fails (lint reports such errors)."""
    if not is_template(source):
        return source
    try:
        return render_text(source, dict(context))
    except (JinjaError, CgraphError, TypeError, ValueError):
        return source


def state_texts(state: AnyState | None, context: Mapping[str, Any]) -> dict[str, Any]:
    """The state's prompt texts, rendered with the session's variables."""
    texts: dict[str, Any] = {"objective": ""}
    for name in TEXT_FIELDS:
        texts[name] = [render_safe(t, context) for t in getattr(state, name, ())]
    if state is not None:
        texts["objective"] = render_safe(state.objective, context)
    return texts


def authored_reply(state: AnyState | None, context: Mapping[str, Any]) -> str:
    """The state's own words: its `say:` template, else its actions. A failing `say:`
    raises (`RenderError`): its source is never shown to the user."""
    say = getattr(state, "say", None)
    if say:
        return render_text(say, dict(context)).strip() if is_template(say) else say.strip()
    return " ".join(render_safe(a, context) for a in getattr(state, "actions", ()))


def _option_view(option: ExitOption) -> dict[str, Any]:
    return {
        "id": option.id,
        "description": option.description,
        "target": option.target,
        "examples": list(option.examples),
        "anywhere": option.anywhere,
    }


class Prompter:
    """Builds requests for one session; see the module docstring."""

    def __init__(
        self, root: Graph, transcript: Messages, marks: HistoryMarks | None = None
    ) -> None:
        self.root = root
        self.transcript = transcript
        """The event log's transcript (the same list: it grows as the log does)."""
        self.marks = marks or HistoryMarks()
        """Where the window starts and the running summary (saved in every snapshot)."""
        self.cache: dict[Hashable, str] = {}
        """Rendered system prompts of this session, by graph, state and texts."""
        self._topologies: dict[int, str] = {}
        self._sizes: list[int] = []

    def restart(self, marks: HistoryMarks) -> None:
        """The transcript was rewritten (an undo): forget what was measured of it."""
        self.marks, self._sizes = marks, []

    def window_start(self) -> int:
        """Where the history window begins now (`cgraph.runtime.prompts.history_start`),
        never before a context reset."""
        sizes = self._sizes
        for message in self.transcript[len(sizes) :]:
            sizes.append(estimate_tokens(message["content"]))
        marks = self.marks
        first = max(marks.history_start, marks.context_start)
        start = history_start(self.transcript, first, self.root.limits.history_budget(), sizes)
        return max(start, marks.context_start)

    def history(self) -> tuple[Messages, int]:
        """The messages prompts show — the running summary first, if any, then the window —
        and how many older messages the window leaves out."""
        start = self.marks.history_start = self.window_start()
        shown = self.transcript[start:]
        if self.marks.summary:
            shown = [summary_message(self.marks.summary), *shown]
        return shown, start

    def recent_user_messages(self, count: int = RECENT_USER_MESSAGES) -> tuple[str, ...]:
        found: list[str] = []
        for message in reversed(self.transcript):
            if message["role"] == "user":
                found.append(message["content"])
                if len(found) == count:
                    break
        return tuple(reversed(found))

    def topology(self, graph: Graph) -> str:
        cached = self._topologies.get(id(graph))
        if cached is None:
            cached = self._topologies[id(graph)] = topology_text(graph)
        return cached

    def build(
        self,
        view: View,
        kind: RequestKind,
        *,
        graph: Graph,
        state_id: str,
        state: AnyState | None,
        options: tuple[ExitOption, ...] = (),
        allow_stay: bool = False,
        history: Sequence[Mapping[str, str]] | None = None,
        extra: Mapping[str, Any] | None = None,
        opening: bool = False,
        slots: Mapping[str, dict[str, Any]] | None = None,
        collect: tuple[str, ...] = (),
    ) -> LLMRequest:
        """The request `kind` asks at `state_id`, with the window of history (or `history`)."""
        context = template_context(view, graph, state_id)
        texts = state_texts(state, context)
        memory = dict(extra or {})
        window, dropped = (history, 0) if history is not None else self.history()
        variables = {
            **self._variables(view, kind, graph, state_id, texts, options),
            "allow_stay": allow_stay,
            "dropped": dropped,
            "has_memories": bool(memory.get("has_memories", False)),
            "memory_count": int(memory.get("memory_count", 0)),
            "slots": dict(slots or {}),
            "collect": list(collect),
        }
        key = (id(graph), kind, state_id, _flat(texts))
        overrides = graph.prompts or self.root.prompts
        return LLMRequest(
            kind=kind,
            messages=render_messages(
                kind, variables, window, overrides, system_key=key, cache=self.cache
            ),
            schema=answer_schema(kind, exit_ids(options, allow_stay), dict(slots or {})),
            schema_name=f"cgraph_{kind}",
            state=state_id,
            objective=texts["objective"],
            options=options,
            allow_stay=allow_stay,
            user_messages=self.recent_user_messages(),
            stay_prototypes=tuple(t for t in (texts["objective"], *texts["actions"]) if t),
            authored_reply=self._authored(kind, graph, state, context),
            entered_this_turn=view.entered,
            opening=opening,
            graph=graph.name,
            turn=view.turn,
            annotations=tuple(view.annotations),
            has_memories=variables["has_memories"],
            memory_count=variables["memory_count"],
            slots=dict(slots or {}),
            collect=collect,
        )

    @staticmethod
    def _authored(
        kind: RequestKind, graph: Graph, state: AnyState | None, context: Mapping[str, Any]
    ) -> str:
        """The state's own words, for an action's question only (a model may stay with
        them); the fallback when the `say:` fails, never the template's source."""
        if kind != "action":
            return ""
        try:
            return authored_reply(state, context)
        except RenderError:
            return getattr(state, "fallback", None) or graph.fallback

    def _variables(
        self,
        view: View,
        kind: RequestKind,
        graph: Graph,
        state_id: str,
        texts: dict[str, Any],
        options: tuple[ExitOption, ...],
    ) -> dict[str, Any]:
        """What the prompt templates read, besides the flags `build` adds."""
        return {
            "kind": kind,
            "agent": self.root.agent,
            "graph": {"name": graph.name, "description": graph.description},
            "state_id": state_id,
            "state": texts,
            "exits": [_option_view(o) for o in options],
            "topology": self.topology(graph) if kind in TOPOLOGY_KINDS else "",
            "memories": list(view.memories),
            "notes": list(view.notes),
            "variables": view.variables,
            "entered_this_turn": view.entered,
            "message": view.message,
        }


def _flat(texts: dict[str, Any]) -> tuple[Any, ...]:
    # Everything the shipped system part reads besides graph, kind and state. The cache
    # belongs to one session, whose graphs live as long as it does, so a graph's id is a
    # stable key there.
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in texts.items())
