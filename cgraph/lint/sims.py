"""`cgraph lint` of sim files (`*.sim.yaml`): the schema, then what only the graph can tell.

Each problem is located in the sim file: a graph that does not exist or does not load, a
goal, `never` or `says:` naming no state of it, facts and goal values naming no slot or
variable, two personas of one name (reports match personas by name), and a goal the
declared exits cannot reach without a `never` state.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.errors import GraphError
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import did_you_mean, fix_for, load_graph, load_graph_text
from cgraph.spec.model import Graph, GraphState, Slot, anywhere_targets, targets_of
from cgraph.spec.names import END, RESUME
from cgraph.spec.read import Document
from cgraph.spec.simfile import Persona, SimFile, parse_sim
from cgraph.spec.trust import Trust, graph_file_problem


def check_sim_file(
    doc: Document,
    texts: Mapping[Path, str] | None = None,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> list[Diagnostic]:
    """Every problem of one read sim file, located. `texts` (by resolved path) is read
    instead of the graph file on disk: the graph as an editor holds it, saved or not.
    Its graph is loaded with `trust` and `limits` (see `load_graph`)."""
    sim, found = parse_sim(doc)
    if sim is None:
        return found
    graph_path = sim.graph_path
    text = (texts or {}).get(Path(os.path.realpath(graph_path)))
    if text is None and not graph_path.is_file():
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
        graph = (
            load_graph(graph_path, trust=trust, limits=limits)
            if text is None
            else load_graph_text(text, str(graph_path), trust=trust, limits=limits)
        )
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
                fix=fix_for(state, names),
            )


def _slots(
    doc: Document, graph: Graph, persona: Persona, where: tuple[str | int, ...]
) -> Iterator[Diagnostic]:
    known = _names(graph)
    given: Iterable[tuple[str, tuple[str | int, ...]]] = [
        *((n, (*where, "facts", n)) for n in persona.facts),
        *((n, (*where, "goal", "slots", n)) for n in persona.goal.slots),
    ]
    slots = {n: slot for g in _graphs(graph) for n, slot in g.slots.items()}
    for name, value in persona.facts.items():
        problem = _misfit(slots[name], value) if name in slots else None
        if problem:
            yield doc.diag(
                (*where, "facts", name),
                "sim-fact-invalid",
                f"fact `{name}: {value!r}` {problem}",
                "give a value the slot accepts, or the user's answers are refused",
                severity=Severity.WARNING,
            )
    for name, path in given:
        if name not in known:
            yield doc.diag(
                path,
                "unknown-slot",
                f"`{name}` is not a slot or variable of graph `{graph.name}`",
                did_you_mean(name, known) + "use a name from the graph's `slots:` or `variables:`",
                key=True,
                fix=fix_for(name, known),
            )


def _names(graph: Graph) -> list[str]:
    """The slots and variables of the graph and of the sub-graphs it may enter (a facts
    line names a sub-graph's slot as plainly as its own)."""
    return list(dict.fromkeys(n for g in _graphs(graph) for n in (*g.slots, *g.variables)))


def _graphs(graph: Graph, depth: int = 0) -> list[Graph]:
    found = [graph]
    folder = graph.source.parent if graph.source else Path.cwd()
    for state in graph.states.values():
        if not isinstance(state, GraphState) or depth > 8:
            continue
        path = folder / state.graph
        if graph_file_problem(path, folder, graph.trust) is not None or not path.is_file():
            continue  # the graph's own lint says why
        try:
            sub = load_graph(path, trust=graph.trust, limits=graph.read_limits)
            found += _graphs(sub, depth + 1)
        except GraphError:
            continue
    return found


def _misfit(slot: Slot, value: object) -> str | None:
    """Why a slot would refuse `value`, or None."""
    import re

    if slot.enum and value not in slot.enum:
        return f"is not one of the slot's values ({', '.join(map(str, slot.enum))})"
    if slot.type in ("integer", "number") and (
        isinstance(value, bool) or not isinstance(value, (int, float))
    ):
        return f"is not a {slot.type}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if slot.minimum is not None and value < slot.minimum:
            return f"is under the slot's minimum {slot.minimum:g}"
        if slot.maximum is not None and value > slot.maximum:
            return f"is over the slot's maximum {slot.maximum:g}"
    if slot.pattern and isinstance(value, str) and not re.search(slot.pattern, value):
        return f"does not match the slot's pattern `{slot.pattern}`"
    return None


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
    """Each state's targets; `RESUME` as every state an interruption may begin in."""
    anywhere = anywhere_targets(graph)
    edges = {
        name: (*targets_of(state), *(anywhere if state.type == "action" else ()))
        for name, state in graph.states.items()
    }
    edges[RESUME] = tuple(n for n, s in graph.states.items() if s.type == "action")
    return edges


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
