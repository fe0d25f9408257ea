"""Memory extraction after a turn: one `extract` question, asked once the reply is committed.

A finished turn whose graph stores memories (`memory.store`) is followed by one question
over the turn (or the whole session) whose answer the memory gateway stores. It runs after
the reply is committed, so the user never waits for it, and a crash in between leaves a
turn whose extraction is still pending (`pending`), done on resume. A front end may ask
it in the background (`Background`): its answer is taken in when it comes, logged for
its turn, and the next message never waits for it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence

from cgraph.runtime.ask.exchange import Asked, ask
from cgraph.runtime.ask.questions import Ask
from cgraph.runtime.ask.requests import Prompter
from cgraph.runtime.log import reading as log_view
from cgraph.runtime.memory.gateway import MemoryGateway, this_turn
from cgraph.runtime.needs import Steps, drive
from cgraph.runtime.ports import ChatModel, LLMRequest, Rememberer
from cgraph.runtime.state.outcomes import Effects, Emit
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
    return not any(log_view.is_extraction(e, state.turn) for e in turn_events())


def extract(
    view: View,
    root: Graph,
    state: AnyState | None,
    prompter: Prompter,
    chat: ChatModel | None,
    rememberer: Rememberer | None,
    memory: MemoryGateway,
) -> Steps[Effects]:
    """Ask the `extract` question (or, without a language model, the rememberer) and store
    what it found; the log entries it leaves."""
    if chat is None:
        assert rememberer is not None, "a session without a chat model has a rememberer"
        found = rememberer.remember(prompter.recent_user_messages())
        return (yield from memory.store_extracted(found, 1, (), view.here, view.turn))
    asked = yield from ask(chat, question(view, root, state, prompter))
    return (yield from stored(asked, memory, view.here, view.turn))


def question(view: View, root: Graph, state: AnyState | None, prompter: Prompter) -> LLMRequest:
    """The `extract` question over the turn (or the session's window)."""
    every_turn = root.memory.store == "every_turn"
    transcript = prompter.transcript
    history = this_turn(transcript) if every_turn else prompter.history(view.marks)[0]
    ask = Ask(history=history)
    return prompter.build(view, "extract", graph=root, state_id=view.here, state=state, ask=ask)


def stored(asked: Asked, memory: MemoryGateway, here: str, turn: int) -> Steps[Effects]:
    """What the answer to turn `turn`'s `extract` question found, stored; the log entries
    it leaves (marked with that turn: a background answer is logged when it comes)."""
    answer, calls = asked.value, asked.decision.attempts
    memories = list(answer.memories) if answer is not None else None
    found = yield from memory.store_extracted(memories, calls, asked.failures, here, turn)
    return tuple(_for_turn(e, turn) for e in found)


def _for_turn(event: Emit, turn: int) -> Emit:
    if event.kind not in ("memory_stored", "memory_error"):
        return event
    return Emit(event.kind, {**event.data, "turn": turn})


class Background:
    """Turn `turn`'s `extract` question asked in a thread, so that the next reply never
    waits for it: the thread only asks (no store, no log); the session's one writer takes
    the answer in (`stored`) when it has come, whatever turn the session is at by then."""

    def __init__(self, turn: int, here: str, chat: ChatModel, request: LLMRequest) -> None:
        self.turn, self.here = turn, here
        self._done = threading.Event()
        self._asked: Asked | None = None
        # In the session's context: whoever watches its model calls (`cgraph.observe`: a
        # run's trace) sees this one too.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run, chat, request), name="cgraph-extract", daemon=True
        )
        self._thread.start()

    def _run(self, chat: ChatModel, request: LLMRequest) -> None:
        try:
            chat.begin_turn()  # its own deadline: a stalled provider ends it too
            self._asked = drive(ask(chat, request))
        finally:
            self._done.set()

    def answer(self, wait: bool) -> Asked | None:
        """The answer when it has come (waiting for it with `wait`), else None."""
        if wait:
            self._done.wait()
        return self._asked if self._done.is_set() else None
