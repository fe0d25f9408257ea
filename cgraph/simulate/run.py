"""One simulated run: one persona, one seed, one fresh in-memory session.

The user (offline or a model) says a line, the session answers through the library API
(`Session.send`), and the run watches the session's state, never the reply's prose: the
states entered, the exits taken against the exit meant, variables unchanged for a turn
(a re-ask), the same state with the same variables twice (a no-progress loop), guards,
fallbacks and clarifying questions. It ends `end`, `max_turns`, `guard`, `stuck`,
`abandoned` or `error`, and the goal is checked on the session's last state.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cgraph.draw.taken import Exit, exits_taken
from cgraph.errors import CgraphError
from cgraph.runtime.ports import ChatModel, ExitChooser
from cgraph.session import Session, Sessions, SessionView, ToolRunner, Turn
from cgraph.simulate.options import BudgetSpent, CacheMiss
from cgraph.simulate.plan import STAY, Planner
from cgraph.simulate.user import Line, OfflineUser
from cgraph.spec.model import Graph
from cgraph.spec.names import END, START
from cgraph.spec.simfile import Persona, SimFile

OUTCOMES = ("end", "max_turns", "guard", "stuck", "abandoned", "error")


def run_seed(master: int, persona: str, index: int) -> int:
    """A run's seed: a hash of the master seed, the persona's name and the run's index,
    so adding a persona or a run changes no other run. 31 bits: every provider takes it."""
    digest = hashlib.sha256(f"{master}\x00{persona}\x00{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def session_id(seed: int) -> str:
    """A run's session id, from its seed: the same run is the same session in a store."""
    return f"sim{seed:08x}"


def _forget(sid: str, store: Path) -> None:
    """A stored session of an earlier simulation of the same run, deleted first."""
    from cgraph.errors import SessionNotFound

    with contextlib.suppress(SessionNotFound):
        Sessions(store).delete(sid)


def exit_name(key: Exit | None) -> str | None:
    """An exit key as a test file names exits, `state -> exit`; `stay` for staying."""
    if key is None:
        return None
    return "stay" if key == STAY else f"{key[0]} -> {key[1]}"


class User(Protocol):
    """Who plays a persona: the next line, given where the conversation is."""

    calls: int
    """Model calls it made (0 offline)."""
    tokens: int
    seed_honoured: bool | None
    """Whether its model takes the run's seed (None offline: the seed is the user's own)."""

    def next_line(self, state: str, variables: Mapping[str, Any], reached: set[str]) -> Line: ...

    def hear(self, reply: str) -> None:
        """The agent's reply to the last line (or its opening words)."""

    def judge(self, transcript: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The persona's `criteria:`, each judged met or not."""
        ...


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One simulated turn as `results.jsonl` keeps it."""

    number: int
    state: str
    """Where the user spoke (the start state on the first turn)."""
    user: str
    kind: str
    reply: str
    path: tuple[str, ...]
    taken: str | None
    """The exit taken out of `state` (`state -> exit`), `stay`, or None at END."""
    meant: str | None
    target: str | None
    """The state the user's plan went to next (the meant exit's target)."""
    verdict: str | None
    """`right`, `wrong` or `asked` when the user meant a known move; else None."""
    changed: bool
    guard: str | None = None
    fallback: bool = False
    clarified: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "turn": self.number,
            "state": self.state,
            "user": self.user,
            "kind": self.kind,
            "reply": self.reply,
            "path": list(self.path),
            "taken": self.taken,
            "meant": self.meant,
            "target": self.target,
            "verdict": self.verdict,
            "changed": self.changed,
            "guard": self.guard,
            "fallback": self.fallback,
            "clarified": self.clarified,
        }


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run: how it ended, whether its goal held, and every turn."""

    persona: str
    run: int
    seed: int
    outcome: str
    success: bool
    failure: str | None
    """None for a success; else `wrong_end`, `entered_never` or the outcome."""
    turns: tuple[TurnRecord, ...]
    edges: tuple[str, ...]
    """Every exit taken (`state -> exit`, `ANY -> exit` for a global one), in order."""
    entered: tuple[str, ...]
    """States entered, first time each, in order."""
    loops: tuple[tuple[str, ...], ...] = ()
    stuck: str | None = None
    """Where a run ended `stuck` or `abandoned`."""
    ended_at: str | None = None
    """For a run that reached END: the exit it ended by."""
    missing: tuple[str, ...] = ()
    """What of the goal did not hold, in words."""
    user_calls: int = 0
    agent_calls: int = 0
    tokens: int = 0
    error: str | None = None
    judged: tuple[dict[str, Any], ...] = ()
    """The persona's `criteria:`, each judged met or not (model users only)."""
    seed_honoured: bool | None = None
    """A model user's: whether its provider took the seed (litellm's parameter table)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "persona": self.persona,
            "run": self.run,
            "seed": self.seed,
            "session": session_id(self.seed),
            "outcome": self.outcome,
            "success": self.success,
            "failure": self.failure,
            "turns": len(self.turns),
            "missing": list(self.missing),
            "ended_at": self.ended_at,
            "stuck": self.stuck,
            "loops": [list(c) for c in self.loops],
            "entered": list(self.entered),
            "edges": list(self.edges),
            "user_calls": self.user_calls,
            "agent_calls": self.agent_calls,
            "tokens": self.tokens,
            "error": self.error,
            "judged": list(self.judged),
            "seed_honoured": self.seed_honoured,
            "transcript": [t.as_json() for t in self.turns],
        }


@dataclass
class Setup:
    """What every run of one sim file shares: the graph, its planner, the agent's model."""

    sim: SimFile
    graph: Graph
    model: ChatModel | ExitChooser
    planner: Planner
    tools: ToolRunner
    offline_agent: bool = True
    tested: dict[Exit, list[str]] = field(default_factory=dict)
    store: Path | None = None
    """Where each run's session is kept (`--store`); None: in memory."""
    make_user: Callable[[Persona, random.Random], User] | None = None
    """A model user's factory (`--user model`); None for the offline user."""

    def close(self) -> None:
        self.tools.close()

    def user(self, persona: Persona, seed: int) -> User:
        rng = random.Random(seed)
        if self.make_user is not None:
            return self.make_user(persona, rng)
        return OfflineUser(persona, self.graph, self.planner, rng, self.tested)


@dataclass
class _Watch:
    """What the run has seen so far."""

    entered: dict[str, None] = field(default_factory=dict)
    edges: list[str] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    """(state, variables) as a key → the turn it was last seen after."""
    loops: dict[tuple[str, ...], None] = field(default_factory=dict)
    paths: list[tuple[str, ...]] = field(default_factory=list)
    still: int = 0
    """Turns in a row in which nothing changed."""


@dataclass(frozen=True, slots=True)
class Replay:
    """Lines to say instead of the persona's (`--minimise`), from a given state on."""

    lines: tuple[str, ...]
    state: str | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)


Trace = list[tuple[str, dict[str, Any]]]
"""(state, variables) before each turn, for `--minimise` to start a case there."""


def simulate(
    setup: Setup,
    persona: Persona,
    index: int,
    replay: Replay | None = None,
    trace: Trace | None = None,
) -> RunRecord:
    """Run `persona` once with its `index`-th seed (or say `replay`'s lines instead)."""
    seed = run_seed(setup.sim.seed, persona.name, index)
    user = setup.user(persona, seed) if replay is None else None
    lines = replay.lines if replay is not None else None
    watch = _Watch()
    turns: list[TurnRecord] = []
    outcome, error, stuck, ended_at = "max_turns", None, None, None
    session: Session | None = None
    sid = session_id(seed)
    try:
        if setup.store is not None and replay is None:
            _forget(sid, setup.store)
        opener = Sessions(setup.store if replay is None else None, tools=setup.tools)
        session = opener.start(
            setup.graph,
            model=setup.model,
            session_id=sid,
            state=replay.state if replay is not None else None,
            variables=dict(replay.variables) if replay is not None else None,
        )
        if session.opening is not None:
            _entered(watch, session.opening.path)
            if user is not None:
                user.hear(session.opening.reply)
        limit = setup.sim.max_turns if lines is None else len(lines)
        patience = persona.traits.patience
        for number in range(1, limit + 1):
            view = session.view
            here = setup.planner.start_state() if view.state == START else view.state
            if user is not None:
                line = user.next_line(view.state, view.variables, set(watch.entered))
            else:
                assert lines is not None
                line = Line(lines[number - 1], None, "replay")
            if line.kind == "lost":  # no declared way on to its goal: the user gives up
                outcome, stuck = "abandoned", here
                break
            if trace is not None:
                trace.append((view.state, view.variables))
            before = _key(here, view.variables)
            turn = session.send(line.text)
            if user is not None:
                user.hear(turn.reply)
            view = session.view
            record = _record(setup.graph, setup.planner, number, here, line, turn, before, view)
            turns.append(record)
            _observe(watch, setup.graph, turn, number, view, record.changed)
            if view.completed:
                outcome = "end"
                ended_at = _ended_by(setup.graph, turn)
                break
            if turn.guard and not record.changed:
                outcome = "guard"
                break
            if patience is not None and watch.still >= patience:
                outcome, stuck = "abandoned", view.state
                break
            if watch.still + 1 >= setup.sim.stuck_after:
                outcome, stuck = "stuck", view.state
                break
    except (CacheMiss, BudgetSpent):
        raise  # the simulation stops: no run is right after it
    except CgraphError as err:
        outcome, error = "error", f"turn {len(turns) + 1}: {err.message}"
    judged = (
        user.judge([t.as_json() for t in turns]) if user is not None and persona.criteria else []
    )
    missing = _missing(persona, watch, session.view.variables if session is not None else {})
    success = outcome == "end" and not missing
    failure = None if success else _failure(outcome, persona, watch)
    return RunRecord(
        persona=persona.name,
        run=index,
        seed=seed,
        outcome=outcome,
        success=success,
        failure=failure,
        turns=tuple(turns),
        edges=tuple(watch.edges),
        entered=tuple(watch.entered),
        loops=tuple(watch.loops),
        stuck=stuck,
        ended_at=ended_at,
        missing=missing,
        agent_calls=0 if setup.offline_agent or session is None else sum(_calls(session)),
        user_calls=user.calls if user is not None else 0,
        tokens=user.tokens if user is not None else 0,
        error=error,
        judged=tuple(judged),
        seed_honoured=user.seed_honoured if user is not None else None,
    )


def _record(
    graph: Graph,
    planner: Planner,
    number: int,
    here: str,
    line: Line,
    turn: Turn,
    before: str,
    view: SessionView,
) -> TurnRecord:
    taken = _taken(graph, here, turn)
    meant = exit_name(line.meant)
    verdict = None
    spoken = planner.state(here)
    speaks = spoken is not None and spoken.type == "action"
    if meant is not None and taken is not None and speaks:
        verdict = "asked" if turn.clarified else ("right" if taken == meant else "wrong")
    changed = bool(turn.transitions) or _key(view.state, view.variables) != before
    return TurnRecord(
        number=number,
        state=here,
        user=line.text,
        kind=line.kind,
        reply=turn.reply,
        path=turn.path,
        taken=taken,
        meant=meant,
        target=line.target,
        verdict=verdict,
        changed=changed,
        guard=turn.guard,
        fallback=turn.fallback,
        clarified=turn.clarified,
    )


def _taken(graph: Graph, here: str, turn: Turn) -> str | None:
    """The exit the turn took out of the state the user spoke in, or `stay`; None when the
    turn never was there (a conditional start chose another state than the plan's)."""
    for t in turn.transitions:
        if t.from_state == here:
            return exit_name(next(iter(exits_taken(graph, [t]))))
    return "stay" if here in turn.path or not turn.transitions else None


def _observe(
    watch: _Watch, graph: Graph, turn: Turn, number: int, view: SessionView, changed: bool
) -> None:
    _entered(watch, turn.path)
    watch.edges.extend(_name(graph, t) for t in turn.transitions)
    watch.paths.append(turn.path)
    watch.still = 0 if changed else watch.still + 1
    if view.completed:
        return
    key = _key(view.state, view.variables)
    last = watch.seen.get(key)
    cycle = _collapsed([s for p in watch.paths[last:number] for s in p]) if last is not None else []
    if any(s != view.state for s in cycle):  # it left, and came back as it was
        watch.loops[_canonical(cycle, view.state)] = None
    watch.seen[key] = number


def _canonical(cycle: list[str], state: str) -> tuple[str, ...]:
    """A cycle from `state` back to it, rotated to begin at its first state by name, so
    the same loop entered at another of its states is listed once."""
    ring = cycle[1:] if cycle and cycle[0] == state else cycle
    ring = ring if ring and ring[-1] == state else [*ring, state]
    start = ring.index(min(ring))
    turned = ring[start:] + ring[:start]
    return (*turned, turned[0])


def _collapsed(states: list[str]) -> list[str]:
    """A state repeated by consecutive turns (each turn's path begins where it is) once."""
    return [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]


def _name(graph: Graph, t: Any) -> str:
    found = exit_name(next(iter(exits_taken(graph, [t]))))
    assert found is not None
    return found


def _entered(watch: _Watch, path: Sequence[str]) -> None:
    for state in path:
        if state not in (START, END):
            watch.entered.setdefault(state, None)


def _key(state: str, variables: Mapping[str, Any]) -> str:
    return state + "\x00" + json.dumps(variables, sort_keys=True, default=str)


def _ended_by(graph: Graph, turn: Turn) -> str | None:
    ends = [t for t in turn.transitions if t.to_state == END]
    return _name(graph, ends[-1]) if ends else None


def _missing(persona: Persona, watch: _Watch, variables: Mapping[str, Any]) -> tuple[str, ...]:
    goal = persona.goal
    found = [f"never reached `{s}`" for s in goal.reach if s not in watch.entered]
    found += [f"entered `{s}`" for s in goal.never if s in watch.entered]
    found += [
        f"`{name}` is {variables.get(name)!r}, not {want!r}"
        for name, want in goal.slots.items()
        if variables.get(name) != want
    ]
    return tuple(found)


def _failure(outcome: str, persona: Persona, watch: _Watch) -> str:
    if outcome != "error" and any(s in watch.entered for s in persona.goal.never):
        return "entered_never"
    return "wrong_end" if outcome == "end" else outcome


def _calls(session: Session) -> list[int]:
    return [t.llm_calls for t in session.log.turns()]
