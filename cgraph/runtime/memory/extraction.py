"""Memory extraction after a turn: one `extract` question, asked once the reply is committed.

A finished turn whose graph stores memories (`memory.store`) is followed by one question
over the turn (or the whole session) whose answer the memory gateway stores. It runs after
the reply is committed, so the user never waits for it, and a crash in between leaves a
turn whose extraction is still pending (`pending`), done on resume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cgraph.runtime.ask.exchange import ask
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.log import reading as log_view
from cgraph.runtime.memory.gateway import MemoryGateway, this_turn
from cgraph.runtime.ports import ChatModel, Rememberer
from cgraph.runtime.state.outcomes import Effects
from cgraph.runtime.state.records import Event
from cgraph.runtime.state.snapshot import SessionState
from cgraph.runtime.state.view import View
from cgraph.spec.model import AnyState, Graph


def pending(
    state: SessionState, memory: MemoryGateway, turn_events: Callable[[], Sequence[Event]]
) -> bool:
    """The latest turn finished and its memories, wanted, were not extracted yet (the
    turn's events are read last: most calls are answered before)."""
    if not state.turn or state.pending is not None:
        return False
    if not memory.wants_extraction(state.completed):
        return False
    return not any(log_view.is_extraction(e) for e in turn_events())


def extract(
    view: View,
    root: Graph,
    state: AnyState | None,
    prompter: Prompter,
    chat: ChatModel | None,
    rememberer: Rememberer | None,
    memory: MemoryGateway,
) -> Effects:
    """Ask the `extract` question (or, without a language model, the rememberer) and store
    what it found; the log entries it leaves."""
    if chat is None:
        assert rememberer is not None, "a session without a chat model has a rememberer"
        found = rememberer.remember(prompter.recent_user_messages())
        return memory.store_extracted(found, 1, (), view.here, view.turn)
    every_turn = root.memory.store == "every_turn"
    transcript = prompter.transcript
    history = this_turn(transcript) if every_turn else prompter.history(view.marks)[0]
    request = prompter.build(
        view, "extract", graph=root, state_id=view.here, state=state, history=history
    )
    asked = ask(chat, request)
    answer, calls = asked.answer, asked.decision.attempts
    memories = list(answer.memories) if answer is not None else None
    return memory.store_extracted(memories, calls, asked.failures, view.here, view.turn)
