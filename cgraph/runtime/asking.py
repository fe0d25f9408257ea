"""Asking the model one question: render the prompt, call, validate, re-ask once, fall back.

A model answer is never applied as it comes: `cgraph.runtime.answers` checks it against the exits
offered. An invalid answer is re-asked once with the error quoted; a second failure, or
an `LLMError` after the backend's own retries, gives `Asked(answer=None)` and the caller
falls back (an action state stays with its fallback reply; a silent state stops the turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from jinja2 import TemplateError as JinjaError

from cgraph.backends.llm.types import ExitOption, LLMRequest, RequestKind, exit_ids
from cgraph.errors import CgraphError, LLMError
from cgraph.runtime.answers import Answer, AnswerError, answer_schema, parse_answer
from cgraph.runtime.prompts import prompt_hash, render_messages
from cgraph.runtime.records import Decision
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.templating import is_template, render_text

if TYPE_CHECKING:
    from cgraph.runtime.engine import Engine

TOPOLOGY_KINDS = frozenset({"decision", "reflection", "start", "graph"})
_TEXT_FIELDS = (
    "actions",
    "intra_state_navigation_guidelines",
    "action_guidelines",
    "boundary_constraints",
    "decision_guidelines",
    "reflection_guidelines",
)
RECENT_USER_MESSAGES = 3


@dataclass(frozen=True, slots=True)
class Asked:
    """A validated answer (None when the engine must fall back) and how it was reached."""

    answer: Answer | None
    decision: Decision


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
    for name in _TEXT_FIELDS:
        texts[name] = [render_safe(t, context) for t in getattr(state, name, ())]
    if state is not None:
        texts["objective"] = render_safe(state.objective, context)
    return texts


def authored_reply(state: AnyState | None, context: Mapping[str, Any]) -> str:
    """The state's own words: its `say:` template, else its actions."""
    say = getattr(state, "say", None)
    if say:
        return render_safe(say, context).strip()
    return " ".join(render_safe(a, context) for a in getattr(state, "actions", ()))


def _option_view(option: ExitOption) -> dict[str, Any]:
    return {
        "id": option.id,
        "description": option.description,
        "target": option.target,
        "examples": list(option.examples),
    }


def build_request(
    engine: Engine,
    kind: RequestKind,
    *,
    graph: Graph,
    state_id: str,
    state: AnyState | None,
    options: tuple[ExitOption, ...] = (),
    allow_stay: bool = False,
    history: list[dict[str, str]] | None = None,
    extra: Mapping[str, Any] | None = None,
    opening: bool = False,
) -> LLMRequest:
    context = engine.template_context(graph, state_id)
    texts = state_texts(state, context)
    metadata = {
        "graph": graph.name,
        "turn": engine.snap.turn,
        # The session's findings so far, for backends that weigh evidence without prose.
        "annotations": list(engine.snap.annotations),
        **(extra or {}),
    }
    window, dropped = (history, 0) if history is not None else engine.history()
    variables = {
        **_prompt_variables(engine, kind, graph, state_id, texts, options, metadata),
        "allow_stay": allow_stay,
        "dropped": dropped,
    }
    return LLMRequest(
        kind=kind,
        messages=render_messages(
            kind,
            variables,
            window,
            graph.prompts or engine.root.prompts,
            system_key=_system_key(kind, graph, state_id, texts),
            cache=engine.prompt_cache,
        ),
        schema=answer_schema(kind, exit_ids(options, allow_stay)),
        schema_name=f"cgraph_{kind}",
        state=state_id,
        objective=texts["objective"],
        options=options,
        allow_stay=allow_stay,
        user_messages=engine.recent_user_messages(RECENT_USER_MESSAGES),
        stay_prototypes=tuple(t for t in (texts["objective"], *texts["actions"]) if t),
        authored_reply=authored_reply(state, context),
        entered_this_turn=engine.snap.entered,
        opening=opening,
        metadata=metadata,
    )


def _prompt_variables(
    engine: Engine, kind: RequestKind, graph: Graph, state_id: str, texts: dict[str, Any],
    options: tuple[ExitOption, ...], metadata: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """What the prompt templates read, besides `allow_stay` and `dropped`."""
    return {
        "kind": kind,
        "agent": engine.root.agent,
        "graph": {"name": graph.name, "description": graph.description},
        "state_id": state_id,
        "state": texts,
        "exits": [_option_view(o) for o in options],
        "topology": engine.topology(graph) if kind in TOPOLOGY_KINDS else "",
        "memories": engine.turn_memories(),
        "notes": list(engine.snap.notes),
        "variables": engine.snap.variables,
        "entered_this_turn": engine.snap.entered,
        "message": engine.message,
        "has_memories": bool(metadata.get("has_memories", False)),
        "memory_count": int(metadata.get("memory_count", 0)),
    }


def _system_key(kind: str, graph: Graph, state_id: str, texts: dict[str, Any]) -> tuple[Any, ...]:
    # Everything the shipped system part reads. The cache belongs to one engine, whose
    # graphs live as long as it does, so a graph's id is a stable key there.
    flat = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in texts.items())
    return (id(graph), kind, state_id, flat)


def ask(engine: Engine, request: LLMRequest) -> Asked:
    """Call the model, validate, re-ask once with the error quoted, else fall back."""
    attempts = 0
    current = request
    answer: Answer | None = None
    for attempt in (1, 2):
        attempts = attempt
        try:
            raw = engine.model.complete(current)
        except LLMError as err:
            engine.emit("llm_error", state=request.state, kind=request.kind, error=err.message)
            break  # the backend already retried; asking again would only repeat the wait
        try:
            answer = parse_answer(raw, request)
            break
        except AnswerError as err:
            engine.emit(
                "llm_error", state=request.state, kind=request.kind, error=err.message,
                invalid_answer=str(raw)[:500], attempt=attempt,
            )  # fmt: skip
            current = _reask(request, raw, err.message)
    return Asked(answer, _decision(engine, request, answer, attempts))


def _reask(request: LLMRequest, raw: str, error: str) -> LLMRequest:
    follow_up = (
        {"role": "assistant", "content": str(raw or "")},
        {
            "role": "user",
            "content": f"[cgraph] Your answer was rejected: {error}. "
            "Answer again with one JSON object that follows the schema.",
        },
    )
    return replace(request, messages=request.messages + follow_up)


def _decision(
    engine: Engine, request: LLMRequest, answer: Answer | None, attempts: int
) -> Decision:
    return Decision.model_construct(  # every field is built right here: skip validation
        state=request.state,
        kind=request.kind,
        chosen=answer.exit if answer else "",
        reason=answer.reason if answer else "the model failed; fallback",
        candidates=request.exit_ids,
        scores=answer.scores if answer else {},
        prompt_hash=prompt_hash(request.messages, request.schema),
        model=str(getattr(engine.model, "name", "")),
        attempts=attempts,
        fallback=answer is None,
    )


def engine_decision(state: str, kind: str, chosen: str, reason: str) -> Decision:
    """A choice the engine made without the model (a single way out): no call, no prompt."""
    return Decision.model_construct(
        state=state, kind=kind, chosen=chosen, reason=reason, candidates=(chosen,), scores={},
        prompt_hash="", model="", attempts=0, fallback=False,
    )  # fmt: skip
