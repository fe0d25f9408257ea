"""Building the request of one question: texts rendered, prompt laid out, history windowed.

A `Prompter` belongs to one session. It keeps what is worth keeping between requests: the
rendered system parts (`cgraph.runtime.ask.prompts`), each graph's topology text, and the
history window with its token estimates. It reads the transcript the event log keeps and
never changes the session.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import fields
from typing import Any, NamedTuple

from cgraph.runtime.ask.answers import answer_schema
from cgraph.runtime.ask.prompts import (
    SYSTEM_CACHE_SIZE,
    render_messages,
    summary_message,
)
from cgraph.runtime.ask.questions import Ask, Posed, Prompt
from cgraph.runtime.log.transcript import Transcript
from cgraph.runtime.ports import ExitOption, LLMRequest, Question, RequestKind
from cgraph.runtime.routes.failures import rendered
from cgraph.runtime.routes.graphs import topology_text
from cgraph.runtime.state.snapshot import HistoryMarks
from cgraph.runtime.state.view import View, template_context
from cgraph.spec.model import (
    PROMPT_TEXT,
    ActionState,
    AnyState,
    DecisionState,
    Graph,
    ReflectionState,
    Tool,
)
from cgraph.spec.slots import shape
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
NOTHING = Ask()


def render_prompt_text(here: str, field: str, source: str, context: Mapping[str, Any]) -> str:
    """One of a state's texts for the model (`objective`, an action, a guideline), rendered.

    A failing render raises `StepRenderFailed` naming `here` and `field`: the turn ends
    with the fallback and a `render_failed` event, and the model is never shown the
    template's source in place of its text.
    """
    if not is_template(source):
        return source
    return rendered(here, field, lambda: render_text(source, dict(context)))


def state_texts(
    state: AnyState | None, context: Mapping[str, Any], here: str = ""
) -> dict[str, Any]:
    """The state's prompt texts, rendered with the session's variables."""
    texts: dict[str, Any] = {"objective": ""}
    for name in TEXT_FIELDS:
        texts[name] = [render_prompt_text(here, name, t, context) for t in getattr(state, name, ())]
    if state is not None:
        texts["objective"] = render_prompt_text(here, "objective", state.objective, context)
    return texts


def authored_reply(state: AnyState | None, context: Mapping[str, Any], here: str) -> str:
    """The state `here`'s own words: its `say:` template, else its actions. A failing
    render raises `StepRenderFailed` (field `say` or `actions`): its source is never shown
    to the user."""
    say = state.say if state is not None else None
    if say:
        text = rendered(here, "say", lambda: render_text(say, dict(context)))
        return text.strip() if is_template(say) else say.strip()
    actions = state.actions if state is not None else ()
    return " ".join(render_prompt_text(here, "actions", a, context) for a in actions)


def _option_view(option: ExitOption) -> dict[str, Any]:
    return {
        "id": option.id,
        "description": option.description,
        "target": option.target,
        "examples": list(option.examples),
        "anywhere": option.anywhere,
        "confirm": option.confirm,
        "early": option.early,
    }


class Prompter:
    """Builds requests for one session; see the module docstring."""

    def __init__(
        self,
        root: Graph,
        transcript: Transcript | list[dict[str, str]],
    ) -> None:
        self.root = root
        if not isinstance(transcript, Transcript):  # a conversation given whole (tests)
            transcript = Transcript.whole(transcript)
        self.transcript = transcript
        """The event log's transcript (the same object: it grows as the log does)."""
        self.cache: dict[Hashable, str] = {}
        """Rendered system prompts of this session, by graph, state and texts."""
        self._topologies: dict[int, str] = {}
        self._texts: dict[tuple[str, str], tuple[AnyState | None, Static | None]] = {}
        """By kind and state: the state, and its texts if they hold no template."""

    def restart(self, transcript: Transcript | None = None) -> None:
        """The transcript was rewritten (an undo): read it again, as it stands."""
        if transcript is not None:
            self.transcript = transcript
        self.transcript.measure_again()

    def window_start(self, marks: HistoryMarks) -> int:
        """Where the history window begins now (`Transcript.window_start`), never before a
        context reset."""
        first = max(marks.history_start, marks.context_start)
        start = self.transcript.window_start(first, self.root.limits.history_budget())
        return max(start, marks.context_start)

    def history(self, marks: HistoryMarks) -> tuple[Messages, int]:
        """The messages prompts show — the running summary first, if any, then the window —
        and how many older messages the window leaves out."""
        start = self.window_start(marks)
        shown = self.transcript[start:]
        if marks.summary:
            shown = [summary_message(marks.summary), *shown]
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
        ask: Ask = NOTHING,
    ) -> LLMRequest:
        """The prompt of the question `kind` at a state, rendered at once (`pose`)."""
        return self.request(
            self.pose(view, kind, graph=graph, state_id=state_id, state=state, ask=ask)
        )

    def pose(
        self,
        view: View,
        kind: RequestKind,
        *,
        graph: Graph,
        state_id: str,
        state: AnyState | None,
        ask: Ask = NOTHING,
        templates: Callable[[str], Mapping[str, Any]] | None = None,
    ) -> Posed:
        """The question `kind` asks at `state_id` (`ask`: what it asks besides the state's
        texts, `cgraph.runtime.ask.questions`), its texts rendered (a failing one fails
        the step, `StepRenderFailed`), and what its prompt is rendered from: the prompt
        itself is rendered only when a model chooser asks for it (`request`).

        `templates`: the step's template contexts by state id (its frame's,
        `StepContext.templates`), asked only when a text reads one; without it the context is
        built from the view."""
        static = self._static(kind, state_id, state)
        if static is None:
            context = templates(state_id) if templates else template_context(view, graph, state_id)
            # The extraction prompt shows no state texts: a state's failing text (already
            # reported when its turn failed) must not stop the memories being kept.
            texts = state_texts(None if kind == "extract" else state, context, state_id)
            authored, text_key = _authored(kind, state_id, state, context), _flat(texts)
        else:
            texts, authored, text_key = static.texts, static.authored, static.key
        memory = dict(ask.extra or {})
        shown = (texts["objective"], *texts["actions"], *texts["intra_state_navigation_guidelines"])
        question = Question(
            kind=kind,
            state=state_id,
            options=ask.options,
            allow_stay=ask.allow_stay,
            user_messages=self.recent_user_messages(),
            objective=texts["objective"],
            stay_prototypes=tuple(t for t in shown if t),
            authored_reply=authored,
            entered_this_turn=view.entered and not view.handed,
            opening=ask.opening,
            graph=graph.name,
            turn=view.turn,
            annotations=tuple(view.annotations),
            has_memories=bool(memory.get("has_memories", False)),
            memory_count=int(memory.get("memory_count", 0)),
            slots=dict(ask.slots),
            collect=ask.collect,
            appends=ask.appends,
            clarifying=ask.clarifying,
            may_clarify=ask.may_clarify,
            missing=ask.missing,
            tools=ask.tools,
        )
        return Posed(question, Prompt(view, graph, texts, text_key, ask.history))

    def request(self, posed: Posed) -> LLMRequest:
        """The prompt of a posed question, rendered (`prompts.render_messages`), with the
        window of history (or the question's own) and the tools it offers."""
        question, prompt = posed.question, posed.prompt
        view, graph, kind = prompt.view, prompt.graph, question.kind
        history = prompt.history
        window, dropped = (history, 0) if history is not None else self.history(view.marks)
        variables = {
            **self._variables(view, kind, graph, question.state, prompt.texts, question.options),
            "allow_stay": question.allow_stay,
            "dropped": dropped,
            "has_memories": question.has_memories,
            "memory_count": question.memory_count,
            "slots": dict(question.slots),
            "shapes": {name: shape(schema) for name, schema in question.slots.items()},
            "collect": list(question.collect),
            "appends": list(question.appends),
            "missing": list(question.missing),
            "asks": question.asks,
            "clarifying": [
                _option_view(o) for o in question.options if o.id in question.clarifying
            ],
        }
        # The system part lists the offered exits, which `when:` and global exits change
        # from step to step within one state.
        key = (
            id(graph),
            kind,
            question.state,
            prompt.text_key,
            question.options,
            question.allow_stay,
            question.asks,
            question.clarifying,
            question.missing,
        )
        overrides = graph.prompts or self.root.prompts
        return LLMRequest(
            kind=kind,
            messages=render_messages(
                kind, variables, window, overrides, system_key=key, cache=self.cache
            ),
            schema=answer_schema(kind, question.answers, dict(question.slots)),
            schema_name=f"cgraph_{kind}",
            state=question.state,
            tools=offered(graph, question.tools),
            question=question,
        )

    def _static(self, kind: RequestKind, state_id: str, state: AnyState | None) -> Static | None:
        """The texts of a state that has no template among them, rendered once; None for a
        state whose texts read the variables (they are rendered at every request)."""
        shown = None if kind == "extract" else state
        cached = self._texts.get((kind, state_id))
        if cached is None or cached[0] is not shown:
            found = None
            if not any(map(is_template, _sources(shown))):
                texts = state_texts(shown, {}, state_id)
                found = Static(texts, _flat(texts), _authored(kind, state_id, state, {}))
            if len(self._texts) >= SYSTEM_CACHE_SIZE:
                self._texts.clear()
            cached = self._texts[(kind, state_id)] = (shown, found)
        return cached[1]

    def _variables(
        self,
        view: View,
        kind: RequestKind,
        graph: Graph,
        state_id: str,
        texts: Mapping[str, Any],
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
            "entered_this_turn": view.entered and not view.handed,
            "handed": view.handed,
            "message": view.message,
        }


class Static(NamedTuple):
    """A state's texts as every prompt shows them, when no template is among them."""

    texts: dict[str, Any]
    key: tuple[Any, ...]
    """The texts as part of the system part's cache key (`_flat`)."""
    authored: str


def _sources(state: AnyState | None) -> list[str]:
    """Every text of `state` a prompt shows or an action's authored reply reads."""
    if state is None:
        return []
    lists = (getattr(state, name, ()) for name in TEXT_FIELDS)
    return [state.objective, state.say or "", *(t for ts in lists for t in ts)]


def _authored(
    kind: RequestKind, here: str, state: AnyState | None, context: Mapping[str, Any]
) -> str:
    """The state's own words, for an action's question only (a model may stay with them).
    A failing `say:` fails the step (`StepRenderFailed`) before the model is asked, whether
    or not the model would have used it."""
    if kind != "action":
        return ""
    return authored_reply(state, context, here)


def offered(graph: Graph, names: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """The functions a request offers: name, description and the parameters' JSON Schema."""
    tools = (graph.tool(name) for name in names)
    return tuple(_function(tool) for tool in tools if tool is not None)


def _function(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def _flat(texts: dict[str, Any]) -> tuple[Any, ...]:
    # Everything the shipped system part reads besides graph, kind and state. The cache
    # belongs to one session, whose graphs live as long as it does, so a graph's id is a
    # stable key there.
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in texts.items())
