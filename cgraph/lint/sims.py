"""`cgraph lint` of sim files (`*.sim.yaml`): the schema, then what only the graph can tell.

Each problem is located in the sim file: a graph that does not exist or does not load, a
goal, `never` or `says:` naming no state of it, facts and goal values naming no slot or
variable, two personas of one name (reports match personas by name), and a goal the
declared exits cannot reach without a `never` state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.errors import GraphError
from cgraph.spec.load import did_you_mean, load_graph
from cgraph.spec.model import Graph, anywhere_targets, targets_of
from cgraph.spec.names import END
from cgraph.spec.read import Document
from cgraph.spec.simfile import Persona, SimFile, parse_sim


def check_sim_file(doc: Document) -> list[Diagnostic]:
    """Every problem of one read sim file, located."""
    sim, found = parse_sim(doc)
    if sim is None:
        return found
    graph_path = sim.graph_path
    if not graph_path.is_file():
        found.append(
            doc.diag(
                ("graph",),
                "graph-missing",
                f"graph `{sim.graph}` does not exist (looked for {graph_path})",
                "the path is relative to the sim file",
            )
        )
        return found
    try:
        graph = load_graph(graph_path)
    except GraphError as err:
        shown = err.diagnostics[0].render() if err.diagnostics else err.message
        found.append(
            doc.diag(
                ("graph",),
                "sim-graph-invalid",
                f"graph `{sim.graph}` does not load: {shown}",
                f"run `cgraph lint {graph_path}`",
            )
        )
        return found
    found.extend(_check(doc, sim, graph))
    return found


def _check(doc: Document, sim: SimFile, graph: Graph) -> Iterator[Diagnostic]:
    if not sim.personas:
        yield doc.diag(
            ("personas",),
            "sim-no-personas",
            "the sim file has no personas",
            "add one under `personas:`",
        )
    seen: dict[str, int] = {}
    for index, persona in enumerate(sim.personas):
        where = ("personas", index)
        if persona.name in seen:
            yield doc.diag(
                (*where, "name"),
                "sim-duplicate-persona",
                f"persona `{persona.name}` is also persona {seen[persona.name] + 1}",
                "give each persona its own name: reports and --baseline match them by name",
            )
        seen.setdefault(persona.name, index)
        yield from _states(doc, graph, persona, where)
        yield from _slots(doc, graph, persona, where)
        yield from _reachable(doc, graph, persona, where)


def _states(
    doc: Document, graph: Graph, persona: Persona, where: tuple[str | int, ...]
) -> Iterator[Diagnostic]:
    names = list(graph.states)
    named: list[tuple[str, tuple[str | int, ...], str]] = [
        *(
            (s, (*where, "goal", "reach", i), "goal.reach")
            for i, s in enumerate(persona.goal.reach)
        ),
        *(
            (s, (*where, "goal", "never", i), "goal.never")
            for i, s in enumerate(persona.goal.never)
        ),
        *((s, (*where, "says", s), "says") for s in persona.says),
    ]
    for state, path, label in named:
        if state not in graph.states and "#" not in state:
            yield doc.diag(
                path,
                "unknown-state",
                f"`{label}` names `{state}`, which is not a state of graph `{graph.name}`",
                did_you_mean(state, names) + "use a state id from the graph's `states:`",
                key=label == "says",
            )


def _slots(
    doc: Document, graph: Graph, persona: Persona, where: tuple[str | int, ...]
) -> Iterator[Diagnostic]:
    known = [*graph.slots, *graph.variables]
    given: Iterable[tuple[str, tuple[str | int, ...]]] = [
        *((n, (*where, "facts", n)) for n in persona.facts),
        *((n, (*where, "goal", "slots", n)) for n in persona.goal.slots),
    ]
    for name, path in given:
        if name not in known:
            yield doc.diag(
                path,
                "unknown-slot",
                f"`{name}` is not a slot or variable of graph `{graph.name}`",
                did_you_mean(name, known) + "use a name from the graph's `slots:` or `variables:`",
                key=True,
            )


def _reachable(
    doc: Document, graph: Graph, persona: Persona, where: tuple[str | int, ...]
) -> Iterator[Diagnostic]:
    """Each goal state reachable from the start, and END from each, around `never`."""
    blocked = set(persona.goal.never)
    edges = _edges(graph)
    starts = [s for s in graph.start_states() if s not in blocked]
    if END not in _closure(starts, edges, blocked):
        yield doc.diag(
            (*where, "goal"),
            "sim-goal-unreachable",
            "no declared path from the start reaches END without entering a `never` state",
            "change the goal, or the graph: the persona can never succeed",
            severity=Severity.WARNING,
            key=True,
        )
        return
    for index, state in enumerate(persona.goal.reach):
        if state not in graph.states:
            continue
        if state not in _closure(starts, edges, blocked) or END not in _closure(
            [state], edges, blocked
        ):
            yield doc.diag(
                (*where, "goal", "reach", index),
                "sim-goal-unreachable",
                f"no declared path reaches `{state}` and then END without entering a `never` state",
                "change the goal, or the graph: the persona can never succeed",
                severity=Severity.WARNING,
            )


def _edges(graph: Graph) -> Mapping[str, tuple[str, ...]]:
    anywhere = anywhere_targets(graph)
    return {
        name: (*targets_of(state), *(anywhere if state.type == "action" else ()))
        for name, state in graph.states.items()
    }


def _closure(
    starts: Iterable[str], edges: Mapping[str, tuple[str, ...]], blocked: set[str]
) -> set[str]:
    seen = set(starts)
    todo = list(seen)
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen and target not in blocked:
                seen.add(target)
                todo.append(target)
    return seen
