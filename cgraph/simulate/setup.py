"""What every run of a sim file shares, built once per process: the graph (linted: a graph
with errors is refused before any run), its planner, the agent's model, a tool worker,
the lines the graph's test files used for each exit, and who plays the personas."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgraph.draw.taken import Exit
from cgraph.errors import GraphError
from cgraph.runtime.routes.exits import exit_options
from cgraph.session import ToolRunner
from cgraph.simulate.options import Options
from cgraph.simulate.plan import Planner
from cgraph.simulate.run import Setup
from cgraph.simulate.user import Line, OfflineUser
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph
from cgraph.spec.names import START
from cgraph.spec.simfile import SimFile
from cgraph.wiring.models import SEMANTIC, resolve_model


def build(sim: SimFile, options: Options, folder: Path | None = None) -> Setup:
    """The shared part of every run of `sim`; `GraphError` when the graph has lint errors."""
    from cgraph.lint.gate import gate

    errors = gate(sim.graph_path, options.trust, options.limits).errors
    if errors:
        raise GraphError(f"{sim.graph_path}: the graph has lint errors", list(errors))
    graph = load_graph(sim.graph_path, trust=options.trust, limits=options.limits)
    model = resolve_model(sim.model, graph.model, embedding_model=graph.embedding_source())
    planner = Planner(graph)
    setup = Setup(
        sim=sim,
        graph=graph,
        model=model,
        planner=planner,
        tools=ToolRunner(),
        offline_agent=sim.model == SEMANTIC,
        tested=tested_lines(graph, sim.graph_path),
        store=options.store,
    )
    if sim.user == "model":
        from cgraph.simulate.model_user import model_users

        setup.make_user = model_users(sim, graph, options, folder or options.out)
    elif options.explore:
        counts: Counter[Exit] = Counter()
        setup.make_user = lambda persona, rng: Explorer(persona, graph, planner, rng, counts=counts)
    return setup


def tested_lines(graph: Graph, path: Path) -> dict[Exit, list[str]]:
    """Lines of the graph's test files (in its `tests/` folder) by the exit they took: a
    turn whose `path` goes from one state straight into the next names the exit."""
    from cgraph.spec.read import read_file
    from cgraph.spec.testfile import parse_tests

    found: dict[Exit, list[str]] = {}
    folder = path.parent / "tests"
    if not folder.is_dir():
        return found
    for file in sorted(folder.glob("*.test.yaml")):
        tests, _ = parse_tests(read_file(file, graph.read_limits.file_size))
        if tests is None or tests.graph_path.resolve() != path.resolve():
            continue
        for case in tests.cases:
            for turn in case.turns:
                key = _exit_of(graph, turn.expect.path)
                users = (turn.user,) if isinstance(turn.user, str) else turn.user
                if key is not None:
                    found.setdefault(key, []).extend(u for u in users if u not in found[key])
    return found


def _exit_of(graph: Graph, path: tuple[str, ...] | None) -> Exit | None:
    if not path or len(path) < 2 or path[0] not in graph.states:
        return None
    for option in exit_options(graph.states[path[0]]):
        if option.target == path[1]:
            return path[0], option.id
    return None


@dataclass
class Explorer(OfflineUser):
    """`--explore`: no goal; in each state the exit taken least so far (by every run of
    the explorer) first, so that the runs spread over the whole graph."""

    counts: Counter[Exit] | None = None

    def next_line(self, state: str, variables: Mapping[str, Any], reached: set[str]) -> Line:
        here = self.planner.start_state() if state == START else state
        steps = self.planner.steps(here, {**variables, **self.persona.facts})
        if not steps:
            return super().next_line(state, variables, reached)
        assert self.counts is not None
        least = min(self.counts[s.key] for s in steps)
        step = self.rng.choice([s for s in steps if self.counts[s.key] == least])
        self.counts[step.key] += 1
        return self._traits(self._line(here, step, variables), step)
