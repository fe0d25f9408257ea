"""The abstract topology: a compact map of a graph, parsed from text or derived from states.

The notation (from Amigo's "State-Based Architecture" page)::

    START(new user) -> [A] welcome_patient      # a conditional entry
    [A] welcome_patient                         # a block: one state and its exits
      (The patient is ready) -> [A] medication_check
      ...                                       # this block lists only some exits
    [R] reflect -> [D] decide                   # a single unlabelled edge
    [A] end_session -> END
    ANY(The user asks to cancel) -> [A] cancelled    # a global exit: from every state
    [S] check_slot
      (when result.available) -> [A] confirm    # a deterministic exit (`when:`)
      -> [A] no_availability                    # its `else` (no condition)
      (on limit) -> [A] failed                  # `on_limit`; `(on error)` for `on_error`
    [A] ask -> other.yaml#state                 # a state of another graph file
    ANY(The user asks about fees) <-> [A] fees  # a resumable exit (`resume: true`)
    [A] fees -> RESUME                          # back to where the interruption left
    ...                                         # states may be left out of this map

Letters: A action, D decision, R reflection, M recall, N annotation, S side-effect,
G graph. `<->` marks a resumable exit: the conversation goes there and comes back (to
the state it left) when the path reaches `RESUME`. Parsing never raises: problems are
returned as located `TopologyProblem`s so lint can point at the exact line of the YAML
block.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from cgraph.spec.model import TYPE_LETTERS, AnyState, Graph, exits_of, is_cross
from cgraph.spec.names import END, RESUME, START

ANY = "ANY"
"""The source of global exits and `limits.on_limit`: they hold in every state."""
ON_ERROR = "on error"
ON_LIMIT = "on limit"
LETTERS = frozenset(TYPE_LETTERS.values())
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_NODE = re.compile(rf"^\[(?P<letter>[^\]\s]*)\]\s*(?P<name>{_NAME})$")
_ARROW = re.compile(r"\s*<?->\s*")
RESUMABLE = "<->"
"""The arrow of a resumable exit (`resume: true`): there, and back when it is done."""


@dataclass(frozen=True, slots=True)
class Node:
    """A state as the topology writes it: `[A] name` (END has no letter)."""

    name: str
    letter: str | None
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Edge:
    """`source -> target`, with the condition in brackets as `label` (None if unlabelled)."""

    source: str
    target: str
    label: str | None = None
    line: int = 0
    resume: bool = False
    """A resumable exit (`resume: true`), written `<->`."""

    @property
    def pair(self) -> tuple[str, str]:
        return (self.source, self.target)


@dataclass(frozen=True, slots=True)
class TopologyProblem:
    """A line of the topology that is not in the notation; `line` is 1-based in the text."""

    line: int
    column: int
    message: str


@dataclass
class Topology:
    """What a topology text says: its nodes, edges, blocks and abbreviations."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    """Every state written as a block header or an edge's source, with its first line."""
    abbreviated: set[str] = field(default_factory=set)
    """Blocks ending in `...`: they list only some of their state's exits."""
    partial: bool = False
    """A top-level `...`: whole states may be left out."""
    problems: list[TopologyProblem] = field(default_factory=list)

    def edge_set(self) -> Counter[tuple[str, str, str | None, bool]]:
        return Counter((e.source, e.target, e.label, e.resume) for e in self.edges)


def parse(text: str) -> Topology:
    """Parse topology text; lines that do not fit the notation become problems."""
    result = Topology()
    block: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if indent == 0:
            block = _top_line(result, stripped, number)
        elif block is None:
            result.problems.append(
                TopologyProblem(number, indent + 1, "indented line outside a `[X] state` block")
            )
        else:
            _block_line(result, block, stripped, number, indent + 1)
    return result


def _top_line(result: Topology, text: str, number: int) -> str | None:
    """Handle a line at the left margin; return the block it opens, if any."""
    if text == "...":
        result.partial = True
        return None
    head, arrow, tail = _split_arrow(text)
    source = next((s for s in (START, ANY) if head.startswith(s)), None)
    if source is not None:
        label = _start_label(result, head, number, source)
        if label is not None and arrow:
            column = len(text) - len(tail) + 1
            _add_edge(result, source, label or None, tail, number, column, arrow == RESUMABLE)
        elif not arrow:
            result.problems.append(
                TopologyProblem(number, 1, f"a {source} line needs `-> [X] state`")
            )
        return None
    node = _node(result, head, number, 1)
    if node is None:
        return None
    result.sources.setdefault(node.name, number)
    if not arrow:
        return node.name
    column = len(text) - len(tail) + 1
    _add_edge(result, node.name, None, tail, number, column, arrow == RESUMABLE)
    return None


def _block_line(result: Topology, block: str, text: str, number: int, column: int) -> None:
    if text == "...":
        result.abbreviated.add(block)
        return
    head, arrow, tail = _split_arrow(text)
    if not arrow:
        result.problems.append(
            TopologyProblem(number, column, "expected `(condition) -> [X] state` or `...`")
        )
        return
    label: str | None = None
    if head:
        if not (head.startswith("(") and head.endswith(")")):
            result.problems.append(
                TopologyProblem(number, column, "write the condition in brackets: `(condition)`")
            )
            return
        label = _clean(head[1:-1]) or None
    at = column + len(text) - len(tail)
    _add_edge(result, block, label, tail, number, at, arrow == RESUMABLE)


def _split_arrow(text: str) -> tuple[str, str, str]:
    """Split at the last `->` (or `<->`), so a condition may itself contain an arrow."""
    matches = list(_ARROW.finditer(text))
    if not matches:
        return text, "", ""
    last = matches[-1]
    return text[: last.start()], last.group().strip(), text[last.end() :]


def _start_label(result: Topology, head: str, number: int, source: str) -> str | None:
    rest = head[len(source) :].strip()
    if not rest:
        return ""
    if rest.startswith("(") and rest.endswith(")"):
        return _clean(rest[1:-1])
    result.problems.append(
        TopologyProblem(number, 1, f"write a {source} line as `{source}(condition) -> [X] state`")
    )
    return None


def _add_edge(
    result: Topology,
    source: str,
    label: str | None,
    target: str,
    number: int,
    column: int,
    resume: bool = False,
) -> None:
    target = target.strip()
    if target in (END, RESUME) or (is_cross(target) and " " not in target):
        result.edges.append(Edge(source, target, label, number, resume))
        return
    node = _node(result, target, number, column)
    if node is not None:
        result.edges.append(Edge(source, node.name, label, number, resume))


def _node(result: Topology, text: str, number: int, column: int) -> Node | None:
    match = _NODE.match(text.strip())
    if match is None:
        result.problems.append(
            TopologyProblem(
                number, column, f"expected `[X] state_id`, `END` or `RESUME`, got `{text}`"
            )
        )
        return None
    letter = match["letter"]
    if letter not in LETTERS:
        letters = ", ".join(f"{v} {k}" for k, v in TYPE_LETTERS.items())
        result.problems.append(
            TopologyProblem(
                number, column, f"unknown type letter `[{letter}]` (letters: {letters})"
            )
        )
        return None
    node = Node(match["name"], letter, number, column)
    result.nodes.append(node)
    return node


def _clean(text: str) -> str:
    return " ".join(text.split())


def graph_edges(graph: Graph) -> list[Edge]:
    """Every edge of a graph as the topology writes it: exits, `next_state`, `on_error`."""
    edges = [Edge(START, target, label) for label, target in _starts(graph)]
    edges += [Edge(ANY, target, label, resume=back) for label, target, back in _anywhere(graph)]
    for name, state in graph.states.items():
        edges.extend(_state_edges(name, state))
    return edges


def _starts(graph: Graph) -> Iterator[tuple[str | None, str]]:
    if isinstance(graph.start, str):
        yield None, graph.start
    else:
        for entry in graph.start:
            yield _clean(entry.when) or None, entry.state


def _anywhere(graph: Graph) -> Iterator[tuple[str | None, str, bool]]:
    """Global exits and `limits.on_limit`, as the `ANY(...)` lines write them (with
    whether each is resumable)."""
    for exit_ in graph.global_exits:
        yield _clean(exit_.shown) or None, exit_.next_state, exit_.resume
    for limit, target in graph.limits.on_limit.items():
        yield f"{ON_LIMIT} {limit}", target, False


def _state_edges(name: str, state: AnyState) -> Iterator[Edge]:
    conditions = state.exit_conditions
    if conditions:
        for exit_ in conditions:
            # An exit with no condition (an `else`) is written as an unlabelled edge.
            yield Edge(name, exit_.next_state, _clean(exit_.shown) or None, resume=exit_.resume)
    else:
        for exit_ in exits_of(state):
            yield Edge(name, exit_.next_state, None)
    for extra, label in ((state.on_error, ON_ERROR), (state.on_limit, ON_LIMIT)):
        if extra:
            yield Edge(name, extra, label)


def hubs(graph: Graph) -> dict[str, tuple[str, ...]]:
    """Each hub of the graph with its desks, in declaration order: a hub is a state some
    `handoff: true` exit leads to, with two desks or more: states it leads to that lead
    back to it (a picture draws the hub above them, their ways back not ranking it)."""
    leads = {name: [e.next_state for e in exits_of(s)] for name, s in graph.states.items()}
    handed = [e.next_state for e in graph.global_exits if e.handoff]
    handed += [e.next_state for s in graph.states.values() for e in exits_of(s) if e.handoff]
    found = {}
    for hub in (name for name in graph.states if name in handed):
        desks = [t for t in leads[hub] if t != hub and hub in leads.get(t, ())]
        if len(set(desks)) > 1:
            found[hub] = tuple(dict.fromkeys(desks))
    return found


def derive(graph: Graph) -> str:
    """The topology of a graph's states, with full exit descriptions as labels."""
    lines = [
        f"{_start_head(START, label)} -> {_target(graph, target)}"
        for label, target in _starts(graph)
    ]
    lines += [
        f"{_start_head(ANY, label)} {_arrow(back)} {_target(graph, target)}"
        for label, target, back in _anywhere(graph)
    ]
    for name, state in graph.states.items():
        edges = list(_state_edges(name, state))
        head = f"[{TYPE_LETTERS[state.type]}] {name}"
        if lines:
            lines.append("")
        if len(edges) == 1 and edges[0].label is None:
            lines.append(f"{head} {_arrow(edges[0].resume)} {_target(graph, edges[0].target)}")
            continue
        lines.append(head)
        for edge in edges:
            condition = f"({edge.label}) " if edge.label is not None else ""
            lines.append(f"  {condition}{_arrow(edge.resume)} {_target(graph, edge.target)}")
    return "\n".join(lines) + "\n"


def _arrow(resume: bool) -> str:
    return RESUMABLE if resume else "->"


def _start_head(source: str, label: str | None) -> str:
    return f"{source}({label})" if label else source


def _target(graph: Graph, name: str) -> str:
    state = graph.states.get(name)
    if name == END or state is None:
        return name
    return f"[{TYPE_LETTERS[state.type]}] {name}"


# Mermaid shapes by state type, so a drawn graph reads like the topology's letters.
_SHAPES = {
    "action": ("[", "]"),
    "decision": ("{", "}"),
    "reflection": ("([", "])"),
    "recall": ("[(", ")]"),
    "annotation": (">", "]"),
    "side_effect": ("[[", "]]"),
    "graph": ("{{", "}}"),
}


def mermaid(graph: Graph) -> str:
    """The graph as a Mermaid flowchart (renders on GitHub, GitLab and in most editors)."""
    ids = {name: f"s{index}" for index, name in enumerate(graph.states)}
    ids.update({START: "start", END: "finish", ANY: "anywhere"})
    lines = ["flowchart TD", '  start(("START"))', '  finish(("END"))']
    if graph.global_exits or graph.limits.on_limit:
        lines.append('  anywhere(("ANY"))')
    for name, state in graph.states.items():
        left, right = _SHAPES[state.type]
        lines.append(f'  {ids[name]}{left}"{_quote(name)}"{right}')
    if any(e.target == RESUME for e in graph_edges(graph)):
        ids[RESUME] = "back"
        lines.append('  back(("RESUME"))')
    for edge in graph_edges(graph):
        target = ids.get(edge.target) or _foreign(lines, ids, edge.target)
        label = f'|"{_quote(edge.label)}"|' if edge.label else ""
        arrow = "<-->" if edge.resume else "-->"  # there, and back when it is done
        lines.append(f"  {ids[edge.source]} {arrow}{label} {target}")
    return "\n".join(lines) + "\n"


def _foreign(lines: list[str], ids: dict[str, str], target: str) -> str:
    """A node for a state of another graph file, drawn once (END is drawn already)."""
    if target == END or not is_cross(target):
        return "finish"
    ids[target] = f"x{len(ids)}"
    lines.append(f'  {ids[target]}[/"{_quote(target)}"/]')
    return ids[target]


def _quote(text: str) -> str:
    return text.replace('"', "#quot;")
