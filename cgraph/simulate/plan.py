"""Shortest paths through a graph's declared exits, counted in user turns.

The planner sees the graph as a designer drew it: each state's exits (a global exit from
every action state it is not excepted from), an exit out of an action state costing one
user message and a silent state's costing none. A goal is a set of states to enter, then
END, never through a `never` state; the search runs over (state, goal states reached) so
the path visits them in whichever order is shortest. `when:` conditions are evaluated on
what the user knows (the slots: its facts and what it would answer); one that reads
anything else (a variable a state sets, a tool's result) counts as possible.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cgraph.draw.taken import Exit, global_exits, targets
from cgraph.errors import CgraphError
from cgraph.runtime.routes.exits import exit_options, holds, unique_ids
from cgraph.runtime.routes.graphs import Graphs
from cgraph.spec import conditions
from cgraph.spec.model import (
    AnyState,
    ExitCondition,
    GlobalExit,
    Graph,
    GraphState,
    Slot,
    exits_of,
)
from cgraph.spec.names import END, RESUME, START, qualify, split
from cgraph.spec.topology import ANY

Node = tuple[str, frozenset[str], str]
"""A search node: the state, the goal states entered, where a `RESUME` goes back to."""
STAY: Exit = ("", "stay")
"""The move a user means when nothing they say should move the conversation."""


@dataclass(frozen=True, slots=True)
class Step:
    """One exit of the plan: its key (as `cgraph.draw.taken` keys exits), the state it
    leaves and the one it enters, and the declared exit itself."""

    key: Exit
    source: str
    target: str
    exit: ExitCondition
    turns: int
    """User messages this step costs: 1 out of an action state, 0 out of a silent one."""

    @property
    def described(self) -> bool:
        """An exit a message chooses (it has a description), not one a `when:` takes."""
        return self.exit.description is not None


class Planner:
    """The declared exits of one graph, searched for shortest paths to a goal.

    States of a sub-graph (`file#state`, as a session names them) are planned by a planner
    of that file, towards its END (where the conversation goes back to the parent): its
    exits are keyed as the runtime numbers them there, after the global exits offered
    (the sub-graph's own, then the root's, which keep their `ANY` key).
    """

    def __init__(self, graph: Graph, key: str = "", root: Planner | None = None) -> None:
        self.graph = graph
        self.key = key
        self.root = root or self
        self._global = global_exits(graph)
        self._targets = targets(graph) if not key else {}
        self._graphs: Graphs = Graphs(graph) if root is None else root._graphs
        self._subs: dict[str, Planner] = {}
        self.slots: dict[str, Slot] = (
            {n: v for g in self._graphs.reachable() for n, v in g.slots.items()}
            if root is None
            else {}
        )
        """Every slot a conversation may collect, the sub-graphs' too."""

    def state(self, name: str) -> AnyState | None:
        """The declared state of a session's state name (a sub-graph's too)."""
        planner, local = self.sub(name)
        return planner.graph.states.get(local)

    def sub(self, state: str) -> tuple[Planner, str]:
        """The planner of the graph `state` belongs to, and the state's id there."""
        key, local = split(state)
        if not key or key == self.key:
            return self, local
        top = self.root
        if key not in top._subs:
            top._subs[key] = Planner(top._graphs.get(key), key, top)
        return top._subs[key], local

    def steps(self, state: str, known: Mapping[str, Any] | None) -> list[Step]:
        """The exits out of `state` that `known` does not rule out (None: every exit)."""
        planner, local = self.sub(state)
        if planner is not self:
            return planner.steps(state, known)
        spec = self.graph.states.get(local)
        if spec is None:
            return []
        cost = 1 if spec.type == "action" else 0
        offered: list[tuple[Exit, GlobalExit]] = []
        if spec.type == "action":
            offered = [((ANY, i), e) for i, e in self._global if local not in e.except_]
            if self.key:  # inside a sub-graph: numbered with the parents' global exits
                offered += [((ANY, i), e) for i, e in self.root._global]
        own = exits_of(spec)
        ids = unique_ids(tuple(e.next_state for _, e in offered) + tuple(e.next_state for e in own))
        if not self.key:
            ids = tuple(k[1] for k, _ in offered) + tuple(o.id for o in exit_options(spec))
        found = []
        for n, (key, anywhere) in enumerate(offered):
            mine = self.key and n < len(self._global)
            key = (state, ids[n]) if mine else key
            target = self._qualified(anywhere.next_state) if mine else anywhere.next_state
            if _possible(anywhere, known, local):
                found.append(Step(key, state, target, anywhere, cost))
        for n, exit_ in enumerate(own, start=len(offered)):
            if _possible(exit_, known, local):
                found.append(
                    Step((state, ids[n]), state, self._qualified(exit_.next_state), exit_, cost)
                )
        return found

    def _qualified(self, target: str) -> str:
        return target if target == END else qualify(self.key, target)

    def path(
        self,
        state: str,
        reach: Sequence[str],
        never: Sequence[str] = (),
        known: Mapping[str, Any] | None = None,
    ) -> list[Step] | None:
        """The fewest-turn path from `state` through every `reach` state to END, avoiding
        `never`; None when the declared exits allow none. In a sub-graph: to its END,
        through the goal states of that file."""
        planner, _ = self.sub(state)
        if planner is not self:
            inside = [s for s in reach if split(s)[0] == planner.key]
            return planner.path(
                state, inside, [s for s in never if split(s)[0] == planner.key], known
            )
        known = known or {}
        goal = frozenset(self._entering(s) for s in reach)
        blocked = frozenset(never)
        first: Node = (state, goal & {state}, "")
        best: dict[Node, int] = {first: 0}
        back: dict[Node, tuple[Node, Step]] = {}
        queue: list[tuple[int, int, Node]] = [(0, 0, first)]
        order = 0
        while queue:
            cost, _, node = heapq.heappop(queue)
            here, got, ret = node
            if here == END and got == goal:
                return _walk_back(back, node)
            if cost > best.get(node, cost):
                continue
            for step in self.steps(here, known):
                target, resume = step.target, ret
                if target == RESUME:  # back where the interruption began
                    target, resume = ret or here, ""
                elif step.exit.resume:
                    resume = here
                if target in blocked:
                    continue
                ahead: Node = (target, got | (goal & {target}), resume)
                if cost + step.turns < best.get(ahead, 1 << 30):
                    best[ahead] = cost + step.turns
                    back[ahead] = (node, step)
                    order += 1
                    heapq.heappush(queue, (cost + step.turns, order, ahead))
        return None

    def _entering(self, goal: str) -> str:
        """A goal state as this graph sees it: its own, or the `graph` state that runs the
        file a sub-graph's goal state is in (the sub-graph's planner takes it from there)."""
        key, local = split(goal)
        if key == self.key:
            return local if not self.key else goal
        for name, state in self.graph.states.items():
            if (
                isinstance(state, GraphState)
                and self._graphs.child_key(self.key, state.graph) == key
            ):
                return self._qualified(name)
        return goal

    def shortest_turns(self, reach: Sequence[str], never: Sequence[str]) -> int | None:
        """User messages on the shortest declared path from the start to the goal."""
        found = self.path(self.start_state(), reach, never)
        if found is None:
            return None
        return sum(s.turns for s in found) or 1

    def holds(self, step: Step, known: Mapping[str, Any]) -> bool | None:
        """Whether a step's `when:` holds on `known`; None when it cannot be told yet."""
        if step.exit.when is None:
            return True
        if not conditions.parse(step.exit.when)[1] <= known.keys():
            return None
        try:
            return holds(step.exit, {**known, "state": step.source})
        except _UNKNOWN:
            return None

    def target(self, key: Exit | None) -> str | None:
        """The state an exit key leads to (None for `STAY` and unknown keys)."""
        if key is None or key == STAY:
            return None
        if key[0] != ANY and split(key[0])[0]:
            planner, _ = self.sub(key[0])
            return next((s.target for s in planner.steps(key[0], None) if s.key == key), None)
        return self._targets.get(key)

    def start_state(self) -> str:
        starts = self.graph.start_states()
        return starts[0] if starts else START


def _possible(exit_: ExitCondition, known: Mapping[str, Any] | None, state: str) -> bool:
    if exit_.when is None or known is None:
        return True
    if not conditions.parse(exit_.when)[1] <= known.keys():
        return True  # it reads what only the conversation will tell (a variable set later)
    try:
        return holds(exit_, {**known, "state": state})
    except _UNKNOWN:
        return True  # it reads what only the conversation will tell (a tool's result)


_UNKNOWN = (CgraphError, TypeError, ValueError, AttributeError, KeyError)


def _walk_back(back: Mapping[Node, tuple[Node, Step]], node: Node) -> list[Step]:
    steps = []
    while node in back:
        node, step = back[node]
        steps.append(step)
    return steps[::-1]
