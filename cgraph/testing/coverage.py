"""Transition coverage: per graph, which states the runs entered and which exits they took.

The exits counted are the ways out a graph declares: each state's exits, its global exits,
and the routes the runtime takes by itself — a state's `on_error`, its own `on_limit`,
and the graph's `limits.on_limit` — so a report shows whether any test ever failed the
tool, or ran out of tries and handed off.

An exit is a (state, exit id) pair as the runtime names it (`cgraph.runtime.routes.exits`), so a
state with two exits to one target counts both. A global exit is one exit of the graph,
keyed (`ANY`, id) and taken when any run takes it from any state (`cgraph.draw.taken`):
it is written once, so it is counted once — per state it would count states where it was
never meant to be tried, and a graph's `except:` list would change its share; so is a
`limits.on_limit` route. Exits no run takes are reported with the `file:line:col` of
their declaration, like lint diagnostics, in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgraph.diagnostics import shown_path
from cgraph.draw.taken import (
    ERROR_ROUTE,
    LIMIT_ROUTE,
    Exit,
    declared,
    exits_taken,
    global_exits,
    is_route,
    targets,
)
from cgraph.runtime.routes.exits import exit_options
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.records import TransitionRecord
from cgraph.spec.model import CROSS, Graph, GraphState
from cgraph.spec.names import RESUME
from cgraph.spec.read import read_file
from cgraph.spec.topology import ANY
from cgraph.testing.runner import FileResult


def _code(name: str) -> str:
    return f"`{name}`"


@dataclass(frozen=True, slots=True)
class Uncovered:
    """An exit no run took, located at its declaration."""

    state: str
    """The state declaring it; `ANY` for a global exit or a `limits.on_limit` route."""
    exit: str
    line: int
    column: int
    target: str = ""

    @property
    def is_global(self) -> bool:
        return self.state == ANY

    @property
    def kind(self) -> str:
        """`exit`, `global_exit`, `on_error` or `on_limit`."""
        if self.exit == ERROR_ROUTE:
            return "on_error"
        if is_route(self.exit):
            return "on_limit"
        return "global_exit" if self.is_global else "exit"

    @property
    def name(self) -> str:
        """How reports name it: "global exit `x`", "exit `x` of `state`", "on limit
        max_visits of `state` → `target`", "on limit max_reflections → `target`" or "on
        error of `state` → `target`"."""
        return self.named(_code)

    def named(self, mark: Callable[[str], str]) -> str:
        """`name`, with each id passed through `mark` (HTML makes it bold)."""
        if is_route(self.exit):
            words = ERROR_ROUTE if self.exit == ERROR_ROUTE else self.exit
            owner = "" if self.is_global else f" of {mark(self.state)}"
            return f"{words}{owner} → {mark(self.target)}"
        if self.is_global:
            return f"global exit {mark(self.exit)}"
        return f"exit {mark(self.exit)} of {mark(self.state)}"


@dataclass(frozen=True, slots=True)
class GraphCoverage:
    """One graph's coverage over every run of every test file that names it."""

    graph: Path
    name: str
    states: tuple[str, ...]
    entered: frozenset[str]
    exits: tuple[Exit, ...]
    taken: frozenset[Exit]
    uncovered: tuple[Uncovered, ...]

    @property
    def percent(self) -> float:
        """Share of exits taken, 0–100 (a graph without exits is fully covered)."""
        if not self.exits:
            return 100.0
        return 100.0 * sum(e in self.taken for e in self.exits) / len(self.exits)

    def as_json(self) -> dict[str, Any]:
        return {
            "graph": str(self.graph),
            "name": self.name,
            "states": {"total": len(self.states), "entered": sorted(self.entered)},
            "exits": {
                "total": len(self.exits),
                "taken": [f"{s} -> {e}" for s, e in self.exits if (s, e) in self.taken],
                "percent": round(self.percent, 1),
            },
            "uncovered": [
                {
                    "state": u.state,
                    "exit": u.exit,
                    "global": u.is_global,
                    "kind": u.kind,
                    "target": u.target,
                    "name": u.name,
                    "line": u.line,
                    "column": u.column,
                }
                for u in self.uncovered
            ],
        }


def declared_exits(graph: Graph) -> tuple[Exit, ...]:
    """Every exit and route the graph declares: its global exits (`ANY`, id) and
    `limits.on_limit` routes, then each state's exits and routes, in file order."""
    return declared(graph)


def coverage(results: Iterable[FileResult]) -> list[GraphCoverage]:
    """Coverage per graph (graphs in the order their test files ran)."""
    graphs: dict[Path, Graph] = {}
    entered: dict[Path, set[str]] = {}
    taken: dict[Path, set[Exit]] = {}
    for result in results:
        if result.graph is None or result.graph_spec is None or not result.runs:
            continue  # `-k` selected none of its cases: nothing to say about its graph
        runs = Graphs(result.graph_spec)
        for run in result.runs:
            for turn in run.turns:
                for sub, path, moves in _per_graph(turn.observed.path, turn.observed.transitions):
                    graph = runs.get(sub)
                    key = (runs.folder / sub).resolve() if sub else result.graph.resolve()
                    graphs.setdefault(key, graph)
                    entered.setdefault(key, set()).update(path)
                    taken.setdefault(key, set()).update(exits_taken(graph, moves))
                for sub, exit_ in _resumed_at_end(runs, turn.observed.transitions):
                    key = (runs.folder / sub).resolve() if sub else result.graph.resolve()
                    taken.setdefault(key, set()).add(exit_)
    return [_one(k, g, entered.get(k, set()), taken.get(k, set())) for k, g in graphs.items()]


def _per_graph(
    path: Sequence[str], moves: Sequence[TransitionRecord]
) -> Iterator[tuple[str, list[str], list[TransitionRecord]]]:
    """A turn split by the graph file each step is in: (its key, "" for the root; the
    states it entered; the moves that left one of its states), ids without their
    `file#` prefix, as that graph names its states (its exits to END stay END). The root
    sees every move: a global exit it declares may be taken inside a sub-graph."""
    yield "", [name for graph, name in map(_split, path) if not graph], list(moves)
    subs = dict.fromkeys(_split(s)[0] for s in [*path, *(m.from_state for m in moves)])
    for key in filter(None, subs):
        entered = [name for graph, name in map(_split, path) if graph == key]
        left = [_local(m) for m in moves if _split(m.from_state)[0] == key]
        yield key, entered, left


def _resumed_at_end(runs: Graphs, moves: Sequence[TransitionRecord]) -> Iterator[tuple[str, Exit]]:
    """The `RESUME` exits of `graph` states whose sub-graph ended an interruption: an
    interruption that enters a sub-graph comes back when the sub-graph ends, so the
    `graph` state's own way out, written `RESUME`, is what happened (its key, the exit)."""
    for move in moves:
        sub = _split(move.from_state)[0]
        if not (move.resumed and sub) or _split(move.to_state)[0] == sub:
            continue
        parents = {"", *(_split(m.from_state)[0] for m in moves)} - {sub}
        for parent in parents:
            for name, state in runs.get(parent).states.items():
                if not isinstance(state, GraphState) or runs.child_key(parent, state.graph) != sub:
                    continue
                for option in exit_options(state):
                    if option.target == RESUME:
                        yield parent, (name, option.id)


def _split(state: str) -> tuple[str, str]:
    """`research.yaml#look_up` → ("research.yaml", "look_up"); a root state → ("", it)."""
    graph, cross, name = state.rpartition(CROSS)
    return (graph, name) if cross else ("", state)


def _local(move: TransitionRecord) -> TransitionRecord:
    source, to = _split(move.from_state), _split(move.to_state)
    target = to[1] if to[0] == source[0] else move.to_state
    return move.model_copy(update={"from_state": source[1], "to_state": target})


def _one(path: Path, graph: Graph, entered: set[str], taken: set[Exit]) -> GraphCoverage:
    exits = declared_exits(graph)
    missing = [e for e in exits if e not in taken]
    return GraphCoverage(
        graph=shown_path(path),
        name=graph.name,
        states=tuple(graph.states),
        entered=frozenset(entered & set(graph.states)),
        exits=exits,
        taken=frozenset(e for e in exits if e in taken),
        uncovered=tuple(_locate(path, graph, missing)),
    )


def _locate(path: Path, graph: Graph, missing: list[Exit]) -> list[Uncovered]:
    if not missing:
        return []
    doc, to = read_file(path, graph.read_limits.file_size), targets(graph)
    found = [
        Uncovered(s, e, *doc.locate(_declaration(graph, s, e)), target=to[s, e]) for s, e in missing
    ]
    return sorted(found, key=lambda u: (u.line, u.column))  # a state's routes among its exits


def _declaration(graph: Graph, state: str, exit_id: str) -> tuple[str | int, ...]:
    """The YAML path of an exit's declaration: its item in `global_exits` or the state's
    `exit_conditions`, the state's `next_state`, `on_error` or `on_limit`, or the guard's
    entry in `limits.on_limit`."""
    if is_route(exit_id):
        if state == ANY:
            return ("limits", "on_limit", exit_id.removeprefix(f"{LIMIT_ROUTE} "))
        return ("states", state, "on_error" if exit_id == ERROR_ROUTE else "on_limit")
    if state == ANY:
        return ("global_exits", [i for i, _ in global_exits(graph)].index(exit_id))
    options = [o.id for o in exit_options(graph.states[state])]
    if graph.states[state].exit_conditions:
        return ("states", state, "exit_conditions", options.index(exit_id))
    return ("states", state, "next_state")
