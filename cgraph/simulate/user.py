"""The offline user: a persona that plans its way through the declared exits.

At each turn it plans the shortest path to its goal from where the conversation is, and
says a line meant for the path's first exit: its own line for the state (`says:`), one of
the exit's `examples`, a line that took the same exit in one of the graph's test files, or
a slot answer made from its facts and the slot's type. Because it knows the exit it meant,
each turn is a labelled decision. Traits make lines harder (typos and casing, fillers, an
off-topic line, a negated example, a wrong value corrected next turn); every choice is
drawn from the run's own `random.Random`, so a run is a function of its seed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cgraph.draw.taken import Exit
from cgraph.simulate.plan import STAY, Planner, Step
from cgraph.simulate.values import made_up
from cgraph.spec.model import ActionState, Graph, Slot
from cgraph.spec.names import START
from cgraph.spec.simfile import Persona
from cgraph.spec.templating import spoken

OFF_TOPIC = (
    "By the way, is it going to rain today?",
    "Sorry, my dog is barking, one second.",
    "Do you know a good pizza place around here?",
    "Hang on, someone is at the door.",
)
"""Lines that answer nothing: the right move is to stay."""
GREETINGS = ("Hello!", "Hi there!", "Good morning!", "Hey, hi.")
"""A run's opening words with the `greets` trait: the right move is to stay and greet back."""
FILLERS = ("um, ", "well, ", "so, ", "hmm, ok, ")
CORRECTIONS = ("Sorry, I meant {value}.", "Actually, {value}.", "No wait, {value}.")
WAITING = ("OK.", "I have given you that already.", "What happens now?")
"""What a user says where the planned exit is one no words take (a `when:` on a variable
the conversation sets): meant for no exit in particular."""
LOST = ""
"""The line of a user whose plan finds no way on from here: it gives up (the run ends
`abandoned` there) and says nothing."""


@dataclass(frozen=True, slots=True)
class Line:
    """One user message and the move it means: an exit key, `STAY`, or None (unknown)."""

    text: str
    meant: Exit | None
    kind: str
    """Where it came from: `says`, `example`, `test`, `description`, `slot`, `off_topic`,
    `negated`, `correction`, `greeting`, `waiting`, `lost`."""
    target: str | None = None
    """The state the meant exit leads to (None for `STAY` and unknown moves)."""


@dataclass
class OfflineUser:
    """One run's user: its persona, the planner, and the run's random source."""

    persona: Persona
    graph: Graph
    planner: Planner
    rng: random.Random
    tested: Mapping[Exit, Sequence[str]] = field(default_factory=dict)
    """Lines that took an exit in the graph's test files."""
    _pending: tuple[str, Line] | None = None
    """The line the user comes back to after an off-topic or negated one, and the state it
    was meant in (if the conversation moved instead, the user plans again)."""
    _corrections: int = 0
    _said: int = 0
    calls: int = 0
    tokens: int = 0
    seed_honoured: bool | None = None

    def next_line(self, state: str, variables: Mapping[str, Any], reached: set[str]) -> Line:
        """What the user says in `state`, given the variables and the states entered."""
        here = self.planner.start_state() if state == START else state
        self._said += 1
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] == here:
            return pending[1]
        if state == START and len(set(self.graph.start_states())) > 1:
            # A conditional start is decided on the first message: the user cannot know
            # where it begins, so it opens with a greeting meant for no exit in particular.
            return Line(self.rng.choice(GREETINGS), None, "greeting")
        if self._said == 1 and self.rng.random() < self.persona.traits.greets:
            return Line(self.rng.choice(GREETINGS), STAY, "greeting")
        step = self._plan(here, variables, reached)
        if step is None:
            return Line(LOST, None, "lost")
        line = self._line(here, step, variables)
        return self._traits(line, step)

    def hear(self, reply: str) -> None:
        """The offline user plans on the session's state, not on what the agent says."""

    def judge(self, transcript: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """No judge offline: judged criteria need `--user model`."""
        return []

    def known(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """What the user knows: each slot's value, or the one it would give."""
        return {
            n: variables.get(n) if variables.get(n) is not None else self.value(n)
            for n in self.planner.slots
        }

    def value(self, slot: str) -> Any:
        return self.persona.facts.get(slot, made_up(self.planner.slots.get(slot)))

    def _plan(self, state: str, variables: Mapping[str, Any], reached: set[str]) -> Step | None:
        goal = self.persona.goal
        known = self.known(variables)
        left = [s for s in goal.reach if s not in reached]
        path = self.planner.path(state, left, goal.never, known)
        if path is None:  # the goal is out of reach from here: at least end, and well
            path = self.planner.path(state, [], goal.never, known) or []
        return next((s for s in path if s.source == state), None)

    def _line(self, state: str, step: Step, variables: Mapping[str, Any]) -> Line:
        wanted = self._unfilled(state, variables)
        if not step.described:  # an exit a `when:` takes: only slot values can lead there
            if wanted:
                return self._slot_answer(state, wanted, variables)
            return Line(self.rng.choice(WAITING), None, "waiting", step.target)
        own = self.persona.says.get(state)
        if own:
            return Line(self.rng.choice(own), step.key, "says", step.target)
        if step.exit.examples:
            return Line(self.rng.choice(step.exit.examples), step.key, "example", step.target)
        if self.tested.get(step.key):
            return Line(self.rng.choice(self.tested[step.key]), step.key, "test", step.target)
        words = step.exit.description or "continue"
        return Line(words, step.key, "description", step.target)

    def _unfilled(self, state: str, variables: Mapping[str, Any]) -> list[str]:
        spec = self.planner.state(state)
        if not isinstance(spec, ActionState):
            return []
        return [name for name in spec.collect if variables.get(name) is None]

    def _slot_answer(self, state: str, wanted: list[str], variables: Mapping[str, Any]) -> Line:
        """The first slot the state waits for; meant for the exit its value leads to."""
        name = wanted[0]
        value = self.value(name)
        slot = self.planner.slots.get(name)
        if value is None:
            return Line(slot.description if slot else name, None, "slot")
        meant = self._after(state, {**variables, name: value}) if len(wanted) == 1 else STAY
        target = self.planner.target(meant)
        if self._corrections < self.persona.traits.corrects:
            wrong = _other(value, slot)
            if wrong is not None:
                self._corrections += 1
                fix = self.rng.choice(CORRECTIONS).format(value=_spoken(value))
                self._pending = (self.planner.target(meant) or state, Line(fix, None, "correction"))
                return Line(_spoken(wrong), None, "slot")
        return Line(_spoken(value), meant, "slot", target)

    def _after(self, state: str, variables: Mapping[str, Any]) -> Exit | None:
        """The exit a `when:` takes once the state has these values; None if unknown."""
        for step in self.planner.steps(state, None):
            if step.described or step.key[0] != state:
                continue
            holds = self.planner.holds(step, variables)
            if holds is None:
                return None
            if holds:
                return step.key
        return STAY

    def _traits(self, line: Line, step: Step) -> Line:
        traits = self.persona.traits
        if line.kind != "slot" and self.rng.random() < traits.off_topic:
            self._pending = (step.source, line)
            return Line(self.rng.choice(OFF_TOPIC), STAY, "off_topic")
        if line.kind in ("example", "says") and self.rng.random() < traits.negates:
            self._pending = (step.source, line)
            return Line(f"No, I wouldn't say {line.text.rstrip('.!?').lower()}.", STAY, "negated")
        text = line.text
        if self.rng.random() < traits.fillers:
            head = text[:1].lower() if text[1:2].islower() else text[:1]  # "LIB-1", not "lIB-1"
            text = self.rng.choice(FILLERS) + head + text[1:]
        if self.rng.random() < traits.typos:
            text = typo(text, self.rng)
        return Line(text, line.meant, line.kind, line.target)


def typo(text: str, rng: random.Random) -> str:
    """`text` lower-cased with two letters of one longer word swapped."""
    words = text.lower().split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if long:
        i = rng.choice(long)
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def _other(value: Any, slot: Slot | None) -> Any:
    """A wrong value of the same slot, for a correction; None where none is obvious."""
    if slot is not None and slot.enum:
        others = [v for v in slot.enum if v != value]
        return others[0] if others else None
    if isinstance(value, int) and not isinstance(value, bool):
        top = slot.maximum if slot is not None and slot.maximum is not None else value + 1
        return value + 1 if value + 1 <= top else value - 1
    return None


def _spoken(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple | dict):  # a list or a record, said as a template says it
        return str(spoken(value))
    return str(value)
