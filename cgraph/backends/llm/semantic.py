"""`semantic`: the offline chooser behind the `ChatModel` port, until the runtime asks an
`ExitChooser` directly.

The chooser itself is `cgraph.backends.offline.chooser.OfflineChooser`; this adapter only
turns a request into its `Question` and the `Choice` into the JSON answer the runtime parses
today. A clarifying question is answered as staying with the question as the reply (the
runtime does not know `clarify` yet). To be removed once the runtime is switched.
"""

from __future__ import annotations

import json
from typing import Any

from cgraph.backends.embed import Embedder
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.backends.offline.memories import extract_memories
from cgraph.backends.offline.slots import extract
from cgraph.runtime.ports import CLARIFY, STAY, Choice, LLMRequest, Question


class SemanticModel:
    """A `ChatModel` that needs no LLM: the offline chooser answering in JSON."""

    name = "semantic"
    offline = True
    """It reads the user's messages itself: no language model is asked."""
    writes_summaries = False
    """It writes no prose: history summaries are extracted from the user's statements."""
    calls_tools = False
    """It calls no tools: action states' `tools` are not offered; side-effect states run."""

    def __init__(
        self,
        rest: str = "",
        embedder: Embedder | None = None,
        calibration: Calibration | None = None,
        embedding_model: str = "",
        **options: Any,
    ) -> None:
        # Provider options (api_base, temperature, ...) mean nothing here and are ignored.
        self.chooser = OfflineChooser(embedder, calibration, embedding_model)

    @property
    def embedder(self) -> Embedder:
        return self.chooser.embedder

    def complete(self, request: LLMRequest) -> str:
        if request.kind == "extract":
            answer: dict[str, Any] = {"memories": extract_memories(request.user_messages)}
        else:
            answer = _answer(request, self.chooser.choose(question_of(request)))
        return json.dumps(answer, ensure_ascii=False)


def question_of(request: LLMRequest) -> Question:
    """The question a request asks, as the chooser reads it. Exits to END or out of a
    flow cannot be taken back (the request does not say which states have side effects)."""
    from dataclasses import replace

    options = tuple(
        replace(o, irreversible=o.irreversible or o.target == "END" or "#" in o.target)
        for o in request.options
    )
    return Question(
        kind=request.kind,
        state=request.state,
        options=options,
        allow_stay=request.allow_stay,
        user_messages=request.user_messages,
        objective=request.objective,
        stay_prototypes=request.stay_prototypes,
        authored_reply=request.authored_reply,
        entered_this_turn=request.entered_this_turn,
        opening=request.opening,
        graph=request.graph,
        turn=request.turn,
        annotations=request.annotations,
        has_memories=request.has_memories,
        memory_count=request.memory_count,
        slots=request.slots,
        collect=request.collect,
        rejected=request.rejected,
    )


def _answer(request: LLMRequest, choice: Choice) -> dict[str, Any]:
    exit_id = STAY if choice.exit == CLARIFY else choice.exit
    answer: dict[str, Any] = {"exit": exit_id, "reason": str(choice.reason)}
    if request.kind == "action":
        spoken = choice.question if choice.exit == CLARIFY else choice.reply
        answer["reply"] = spoken or (request.authored_reply if exit_id == STAY else "")
        just_entered = request.entered_this_turn and not request.opening
        if request.slots and request.user_messages and not just_entered:
            said = dict(choice.slots)
            if choice.slot_problems and not request.rejected:
                # The runtime refuses an invalid value itself and asks once more.
                said = extract(request.slots, request.collect, request.user_messages[-1])
            answer["slots"] = {name: said.get(name) for name in request.slots}
    if request.kind == "reflection":
        answer["note"] = choice.note
    answer["scores"] = dict(choice.confidence)
    return answer
