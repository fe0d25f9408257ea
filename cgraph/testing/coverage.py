"""Transition coverage: per graph, which states the runs entered and which exits they took.

An exit is a (state, exit id) pair as the runtime names it (`cgraph.runtime.exits`), so a
state with two exits to one target counts both. Exits no run takes are reported with the
`file:line:col` of their declaration, like lint diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgraph.runtime.exits import exit_options
from cgraph.spec.model import Graph
from cgraph.spec.read import read_file
from cgraph.testing.runner import FileResult

Exit = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Uncovered:
    """An exit no run took, located at its declaration."""

    state: str
    exit: str
    line: int
    column: int


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
                {"state": u.state, "exit": u.exit, "line": u.line, "column": u.column}
                for u in self.uncovered
            ],
        }


def declared_exits(graph: Graph) -> tuple[Exit, ...]:
    """Every (state, exit id) the graph declares, in file order."""
    return tuple((name, o.id) for name, s in graph.states.items() for o in exit_options(s))


def coverage(results: Iterable[FileResult]) -> list[GraphCoverage]:
    """Coverage per graph (graphs in the order their test files ran)."""
    graphs: dict[Path, Graph] = {}
    entered: dict[Path, set[str]] = {}
    taken: dict[Path, set[Exit]] = {}
    for result in results:
        if result.graph is None or result.graph_spec is None or not result.runs:
            continue  # `-k` selected none of its cases: nothing to say about its graph
        key = result.graph.resolve()
        graphs.setdefault(key, result.graph_spec)
        for run in result.runs:
            for turn in run.turns:
                entered.setdefault(key, set()).update(turn.observed.path)
                taken.setdefault(key, set()).update(turn.observed.exits)
    return [_one(k, g, entered.get(k, set()), taken.get(k, set())) for k, g in graphs.items()]


def _one(path: Path, graph: Graph, entered: set[str], taken: set[Exit]) -> GraphCoverage:
    exits = declared_exits(graph)
    missing = [e for e in exits if e not in taken]
    return GraphCoverage(
        graph=_shown(path),
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
    doc = read_file(path)
    found = []
    for state, exit_id in missing:
        options = [o.id for o in exit_options(graph.states[state])]
        routed = getattr(graph.states[state], "exit_conditions", None)
        where: tuple[str | int, ...] = ("states", state)
        where += ("exit_conditions", options.index(exit_id)) if routed else ("next_state",)
        line, column = doc.locate(where)
        found.append(Uncovered(state, exit_id, line, column))
    return found


def _shown(path: Path) -> Path:
    """The graph's path relative to the working folder when it is under it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
