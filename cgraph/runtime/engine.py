"""The interpreter: one user turn, stepped state by state, committed at every step.

A turn commits the user's message, then loops: the current state's handler
(`cgraph.runtime.handlers`) returns an outcome, the engine checks it against the graph and
the loop guards, applies it, and commits the step's events with the new snapshot in one
transaction. The turn ends at a user-facing reply, a guard, a failure, or END.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

from cgraph.backends.llm.types import ChatModel
from cgraph.backends.memory.policy import MemoryStore
from cgraph.errors import TransitionError
from cgraph.runtime.asking import render_safe
from cgraph.runtime.exits import check_start, check_transition
from cgraph.runtime.graphs import Graphs, topology_text
from cgraph.runtime.handlers import HANDLERS, Enter, Move, Outcome, Reply, Stop, choose_start
from cgraph.runtime.handlers import authored_reply as _authored
from cgraph.runtime.prompts import estimate_tokens, history_start
from cgraph.runtime.records import Decision, Event, EventKind
from cgraph.runtime.snapshot import Frame, Snapshot, jsonable
from cgraph.runtime.store import SessionStore
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import END, START, qualify


class Engine:
    """Runs turns for one session; `Session` owns it and holds the public API."""

    def __init__(
        self,
        *,
        graph: Graph,
        model: ChatModel,
        memory: MemoryStore,
        store: SessionStore,
        session_id: str,
        user_id: str,
        clock: Callable[[], float],
        snapshot: Snapshot,
        events: list[Event],
    ) -> None:
        self.graphs = Graphs(graph)
        self.root = graph
        self.model, self.memory, self.store = model, memory, store
        self.session_id, self.user_id, self.clock = session_id, user_id, clock
        self.snap = snapshot
        self.events = events
        self._transcript: list[dict[str, str]] = []
        self._sizes: list[int] = []
        self._buffer: list[Event] = []
        self._topologies: dict[int, str] = {}
        self.prompt_cache: dict[Hashable, str] = {}
        """Rendered system prompts of this session, by graph, state and texts."""

    @property
    def transcript(self) -> list[dict[str, str]]:
        return self._transcript

    @transcript.setter
    def transcript(self, messages: list[dict[str, str]]) -> None:
        self._transcript, self._sizes = messages, []

    # ----- events and commits -------------------------------------------------------------

    def emit(self, kind: EventKind, /, **data: Any) -> Event:
        event = Event.model_construct(
            seq=self.snap.seq, session=self.session_id, turn=self.snap.turn, kind=kind,
            at=self.clock(), data=data,
        )  # fmt: skip
        self.snap.seq += 1
        self._buffer.append(event)
        self.events.append(event)
        if kind == "user_message":
            self.transcript.append({"role": "user", "content": data["text"]})
        elif kind == "reply" and data.get("text"):
            self.transcript.append({"role": "assistant", "content": data["text"]})
        return event

    def commit(
        self, *, checkpoint: int | None = None, drop_checkpoints_after: int | None = None
    ) -> None:
        """Write the step: buffered events and the snapshot, in one transaction."""
        self.store.commit(
            self.session_id, self._buffer, self.snap.to_dict(), checkpoint=checkpoint,
            drop_checkpoints_after=drop_checkpoints_after,
        )  # fmt: skip
        self._buffer = []

    def record(self, decision: Decision) -> None:
        self.emit("decision", **dict(decision.__dict__))

    # ----- the turn -----------------------------------------------------------------------

    def begin_turn(self, message: str, key: str | None = None) -> None:
        snap = self.snap
        snap.turn += 1
        snap.pending, snap.step, snap.transitions, snap.reflections = message, 0, 0, 0
        snap.entered = False
        keyed = {"key": key} if key is not None else {}
        self.emit("user_message", text=message, state=self.qualified(), **keyed)
        self.commit()

    def run(self) -> None:
        """Step until the turn ends; every step is committed before the next begins."""
        while True:
            outcome = self._outcome()
            done = self._apply(outcome)
            self.snap.step += 1
            if done:
                return
            self.commit()

    def finish_turn(self, *, guard: str | None = None) -> None:
        snap = self.snap
        self.emit(
            "turn_completed", state=self.qualified(), completed=snap.completed, guard=guard,
            transitions=snap.transitions,
        )  # fmt: skip
        snap.pending = None
        self.commit(checkpoint=snap.turn)

    def _outcome(self) -> Outcome:
        if not self.snap.started:
            return choose_start(self, "", push=False)
        frame = self.snap.frame
        graph = self.graphs.get(frame.graph)
        state = graph.states[frame.state]
        return HANDLERS[state.type](self, graph, state)

    def _apply(self, outcome: Outcome) -> bool:
        """Apply an outcome; True when the turn is over."""
        if isinstance(outcome, Reply):
            self.emit("reply", text=outcome.text, state=self.qualified(),
                      fallback=outcome.fallback)  # fmt: skip
            self.finish_turn()
            return True
        if isinstance(outcome, Stop):
            return self._stop(outcome)
        guard = self._guard(outcome)
        if guard is not None:
            return self._stop(guard)
        if isinstance(outcome, Enter):
            self._enter(outcome)
            return False
        return self._move(outcome)

    def _guard(self, outcome: Move | Enter) -> Stop | None:
        """Check an outcome against the graph and the loop guards before it is applied."""
        try:
            if isinstance(outcome, Enter):
                check_start(self.graphs.get(outcome.graph), outcome.target)
            else:
                check_transition(self.current_graph(), self.snap.frame.state, outcome.target)
        except TransitionError as err:
            return Stop("undeclared_transition", err.message)
        limit = self.root.limits.max_transitions_per_turn
        if self.snap.transitions >= limit:
            return Stop("max_transitions_per_turn", f"more than {limit} transitions in a turn")
        key = outcome.graph if isinstance(outcome, Enter) else self.snap.frame.graph
        if outcome.target == END:
            return None
        cap = self._visit_cap(key, outcome.target)
        name = qualify(key, outcome.target)
        if cap is not None and self.snap.visits.get(name, 0) >= cap:
            return Stop("max_visits", f"`{name}` was entered {cap} times already")
        return None

    def _visit_cap(self, key: str, state_id: str) -> int | None:
        graph = self.graphs.get(key)
        state = graph.states.get(state_id)
        own = state.max_visits if state is not None else None
        caps = [c for c in (own, graph.limits.max_visits.get(state_id)) if c is not None]
        if key == "" or state_id in self.root.limits.max_visits:
            caps += [c for c in (self.root.limits.max_visits.get(state_id),) if c is not None]
        return min(caps) if caps else None

    def _enter(self, outcome: Enter) -> None:
        source = self.qualified() if self.snap.started else START
        frame = Frame(outcome.graph, outcome.target)
        if outcome.push:
            self.snap.stack.append(frame)
        else:
            self.snap.stack = [frame]
        self.snap.started = True
        self._arrive(source, outcome.exit_id, outcome.description, outcome.reason)
        if outcome.push:
            self._adopt_variables(self.graphs.get(outcome.graph))

    def _move(self, outcome: Move) -> bool:
        snap = self.snap
        source = self.qualified()
        if outcome.target != END:
            snap.frame.state, snap.frame.returned = outcome.target, False
            self._arrive(source, outcome.exit_id, outcome.description, outcome.reason)
            return False
        if len(snap.stack) > 1:  # a sub-graph ended: back to the parent's `graph` state
            snap.stack.pop()
            snap.frame.returned = True
            self._arrive(source, outcome.exit_id, outcome.description, outcome.reason,
                         visit=False)  # fmt: skip
            return False
        closing = self._closing(outcome)
        self._transition(source, END, outcome.exit_id, outcome.description, outcome.reason)
        snap.completed = True
        self.emit("reply", text=closing, state=END, fallback=False)
        self.finish_turn()
        return True

    def _closing(self, outcome: Move) -> str:
        """The last words of a session: the model's parting reply; else the ending state's
        `say:` when this turn entered it (so the user has not read it yet); else nothing,
        because the closing was already said when the state was entered."""
        if outcome.reply:
            return outcome.reply
        say = getattr(self.current_state(), "say", None)
        if not say or not self.snap.entered:
            return ""
        context = self.template_context(self.current_graph(), self.snap.frame.state)
        return render_safe(say, context).strip()

    def _arrive(self, source: str, exit_id: str, description: str, reason: str,
                *, visit: bool = True) -> None:  # fmt: skip
        target = self.qualified()
        if visit:
            self.snap.visits[target] = self.snap.visits.get(target, 0) + 1
        self.snap.entered = True
        self._transition(source, target, exit_id, description, reason)

    def _transition(self, source: str, target: str, exit_id: str, description: str,
                    reason: str) -> None:  # fmt: skip
        self.snap.transitions += 1
        self.emit("transition", **{"from": source, "to": target, "exit": exit_id,
                                   "description": description, "reason": reason})  # fmt: skip

    def _stop(self, stop: Stop) -> bool:
        """End the turn in the last user-facing state, with its fallback-or-authored text."""
        here = self.qualified()
        if self.snap.last_action:
            self.snap.stack = [Frame(f.graph, f.state, f.returned) for f in self.snap.last_action]
        self.snap.entered = False
        graph, state = self.current_graph(), self.current_state()
        own = getattr(state, "fallback", None)
        if stop.guard is not None:
            text = own or _authored(state, self.template_context(graph, self.snap.frame.state))
            self.emit("guard", guard=stop.guard, detail=stop.detail, at=here,
                      stopped_in=self.qualified())  # fmt: skip
        else:
            text = own or graph.fallback
        self.emit("reply", text=text or graph.fallback, state=self.qualified(),
                  fallback=stop.fallback)  # fmt: skip
        self.finish_turn(guard=stop.guard)
        return True

    # ----- what handlers use --------------------------------------------------------------

    @property
    def message(self) -> str:
        return self.snap.pending or next(
            (m["content"] for m in reversed(self.transcript) if m["role"] == "user"), ""
        )

    def graph(self, key: str) -> Graph:
        return self.graphs.get(key)

    def child_key(self, parent_key: str, relative: str) -> str:
        return self.graphs.child_key(parent_key, relative)

    def folder_of(self, graph: Graph) -> Path:
        return self.graphs.folder_of(graph)

    def current_graph(self) -> Graph:
        return self.graphs.get(self.snap.frame.graph)

    def current_state(self) -> AnyState | None:
        return self.current_graph().states.get(self.snap.frame.state)

    def qualified(self) -> str:
        frame = self.snap.frame
        return qualify(frame.graph, frame.state)

    def mark_user_facing(self) -> None:
        self.snap.last_action = [Frame(f.graph, f.state, f.returned) for f in self.snap.stack]

    def idempotency_key(self) -> str:
        return f"{self.session_id}:{self.snap.turn}:{self.snap.step}"

    def template_context(self, graph: Graph, state_id: str) -> dict[str, Any]:
        variables = self.snap.variables
        return {
            **variables,
            "message": self.message,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "turn": self.snap.turn,
            "state": state_id,
            "graph": graph.name,
            "memories": [m["text"] for m in self.turn_memories()],
            "notes": list(self.snap.notes),
            "annotations": list(self.snap.annotations),
            "vars": dict(variables),
        }

    def set_variables(self, values: dict[str, Any]) -> None:
        clean = {name: jsonable(value) for name, value in values.items()}
        self.snap.variables = {**self.snap.variables, **clean}
        self.emit("variables", state=self.qualified(), values=clean)

    def _adopt_variables(self, graph: Graph) -> None:
        """A sub-graph's declared variables join the session's, without overwriting."""
        missing = {k: v for k, v in graph.variables.items() if k not in self.snap.variables}
        if missing:
            self.snap.variables = {**self.snap.variables, **jsonable(missing)}

    def topology(self, graph: Graph) -> str:
        cached = self._topologies.get(id(graph))
        if cached is None:
            cached = self._topologies[id(graph)] = topology_text(graph)
        return cached

    def history(self) -> tuple[list[dict[str, str]], int]:
        """The transcript window for prompts, and how many older messages it leaves out."""
        budget = self.root.limits.history_tokens
        sizes = self._token_sizes()
        start = history_start(self.transcript, self.snap.history_start, budget, sizes)
        self.snap.history_start = start
        return self.transcript[start:], start

    def _token_sizes(self) -> list[int]:
        """Token estimates of the transcript's messages, computed once per message."""
        sizes = self._sizes
        for message in self.transcript[len(sizes) :]:
            sizes.append(estimate_tokens(message["content"]))
        return sizes

    def recent_user_messages(self, count: int) -> tuple[str, ...]:
        found: list[str] = []
        for message in reversed(self.transcript):
            if message["role"] == "user":
                found.append(message["content"])
                if len(found) == count:
                    break
        return tuple(reversed(found))

    def turn_memories(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for event in reversed(self.events):
            if event.turn != self.snap.turn:
                break
            if event.kind == "recall":
                found[:0] = event.data.get("memories", [])
        return found

    def recall(self, state: str, queries: Sequence[str], tiers: Iterable[str], top_k: int) -> None:
        from cgraph.runtime.memory import recall

        recall(self, state, queries, tuple(tiers), top_k)

    def memory_metadata(self) -> dict[str, Any]:
        from cgraph.runtime.memory import memory_metadata

        return memory_metadata(self)
