"""After a turn: memory extraction as a hook with a policy (Burr's `PostRunStepHook`).

The hook runs once a turn's reply is committed (`after_turn`), with one of two policies:

- `"now"`: the `extract` question is asked and its answer stored before the turn is
  returned (the server: a reply and its memories in one request);
- `"background"`: the question is asked in a thread (`extraction.Background`), and its
  answer is taken in whenever the session next acts after it came, so the next reply never
  waits for it (the terminal, which runs the hook once the reply is shown).

Either way a turn whose extraction did not happen (a crash in between, or a front end that
has not run the hook yet) stays pending and is extracted before the next turn (`before_turn`),
at `settle` (`extract_memories`, `close`) or on resume. Without a language model the
rememberer answers at once under both policies: it asks nobody.
"""

from __future__ import annotations

from functools import partial
from typing import Literal, get_args

from cgraph.errors import ConfigError
from cgraph.runtime.memory.extraction import Background
from cgraph.runtime.needs import Offload, Steps
from cgraph.runtime.turn.engine import Engine

Policy = Literal["now", "background"]
"""When a turn's memories are extracted: before the turn is returned, or in a thread."""
POLICIES: tuple[str, ...] = get_args(Policy)


def policy_of(name: str) -> Policy:
    """`name` as a policy; `ConfigError` naming the policies for any other."""
    if name not in POLICIES:
        raise ConfigError(f"unknown memory policy `{name}`; use one of {', '.join(POLICIES)}")
    return name  # type: ignore[return-value]


class Remembering:
    """The after-turn memory hook of one session's engine: what is still being asked in the
    background, and whether the store may already hold the latest turn's memories."""

    def __init__(self, engine: Engine, policy: Policy = "now") -> None:
        self.engine, self.policy = engine, policy_of(policy)
        self._background: list[Background] = []
        self._maybe_stored = engine.extraction_pending()
        """The latest turn's memories are not logged, but the store may hold them: an
        earlier process finished the turn (and may have died storing them), or their
        extraction failed here after storing."""

    def before_turn(self) -> Steps[None]:
        """What the previous turn left, before a new one: answers that came are taken in,
        and a turn still pending is extracted — in the background when answers are still
        being asked there (the reply never waits for the rest), else now."""
        yield from self._take(wait=False)
        if self._background:
            yield from self.background()
        else:
            yield from self.now()

    def after_turn(self) -> Steps[bool]:
        """The policy, run once the turn's reply is committed; whether it extracted now."""
        if self.policy == "background":
            yield from self.background()
            return False
        return (yield from self.now())

    def now(self) -> Steps[bool]:
        """Extract the latest turn's memories if due, after taking in (waiting for) what the
        background still asks; whether they were extracted now."""
        yield from self._take(wait=True)
        if not self.engine.extraction_pending():
            return False
        try:
            yield from self.engine.extract_memories(recovering=self._maybe_stored)
        except BaseException:
            self._maybe_stored = True  # it may have stored before it failed
            raise
        self._maybe_stored = False
        return True

    def background(self) -> Steps[None]:
        """Ask the latest turn's `extract` question in a thread (once), without waiting;
        with nothing due, or no language model (the rememberer), it is done at once."""
        yield from self._take(wait=False)
        engine = self.engine
        request = engine.extraction_question()
        if request is None or engine.deps.chat is None:
            yield from self.now()
            return
        turn = engine.state.turn
        if any(b.turn == turn for b in self._background):
            return
        self._background.append(Background(turn, engine.qualified(), engine.deps.chat, request))

    def _take(self, wait: bool) -> Steps[None]:
        """Take in the background answers, in order (waiting for them with `wait`)."""
        while self._background:
            first = self._background[0]
            asked = (yield Offload(partial(first.answer, True), "model")) if wait else None
            asked = asked or first.answer(False)
            if asked is None:
                return
            done = self._background.pop(0)
            yield from self.engine.take_extraction(asked, done.here, done.turn)
