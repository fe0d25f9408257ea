"""A graph drawn as a picture with Graphviz: states shaped and coloured by type, only the
declared edges, START and END; optionally what tests or a conversation covered. Global
exits are drawn once, from an `ANY` node (the topology's "from every state"), and so are
`limits.on_limit` routes; a state's `on_error` and `on_limit` routes are dotted edges.
A resumable exit (`resume: true`) has an arrowhead at both ends (there, and back), an
exit that drops an interruption (`drop: true`) a bar at its tail (no way back), and
`RESUME` is a node of its own. A hub (a state `handoff: true` exits lead to, `hubs`) has a
double border and is drawn above its desks, side by side, their ways back to it not
ranking the picture; an exit that hands the message on has a double arrowhead.

`dot_source` writes the DOT text (pure); `render` runs Graphviz's `dot` program on it.
With `ids` every state and edge carries an element id (`node_id`, `edge_id`) that a page
lights up by itself, and the `graph` states named in `opened` are drawn as clusters holding
their sub-graph's states, named as a session names them (`file#state`).
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

from cgraph.draw.taken import (
    ERROR_ROUTE,
    exits_taken,
    global_exits,
    limit_key,
    own_limit,
)
from cgraph.errors import ConfigError, SessionError
from cgraph.runtime.routes.exits import exit_options
from cgraph.runtime.routes.graphs import Graphs
from cgraph.spec.model import AnyState, Graph, GraphState, targets_of
from cgraph.spec.names import END, RESUME, SEPARATOR, START, qualify
from cgraph.spec.topology import ANY, hubs

FORMATS = ("svg", "png", "dot", "mermaid")
INSTALL_HINT = (
    "Graphviz's `dot` program is not installed: `apt-get install graphviz` (Debian, Ubuntu), "
    "`brew install graphviz` (macOS), `choco install graphviz` (Windows)"
)
# (shape, fill) per state type; the legend of every picture.
STYLES = {
    "action": ("box", "#dbeafe"),
    "decision": ("diamond", "#fef3c7"),
    "reflection": ("ellipse", "#ede9fe"),
    "recall": ("cylinder", "#dcfce7"),
    "annotation": ("note", "#ffedd5"),
    "side_effect": ("component", "#e5e7eb"),
    "graph": ("tab", "#fce7f3"),
}
COVERED, UNCOVERED, ROUTE = "#15803d", "#dc2626", "#b45309"
ANY_STYLE = 'shape=circle, label="ANY", fillcolor="#475569", fontcolor=white'
"""The source of the global exits' and `limits.on_limit`'s edges."""


@dataclass(frozen=True, slots=True)
class Highlight:
    """What to mark: exits taken, keyed as `cgraph.draw.taken` keys them, and states
    entered."""

    taken: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    entered: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class _Edge:
    source: str
    target: str
    exit_id: str
    label: str
    route: bool = False
    """`on_error` or `on_limit`: taken by the runtime, not chosen (drawn dotted)."""
    resume: bool = False
    """A resumable exit: the conversation comes back (an arrowhead at both ends)."""
    handoff: bool = False
    """It hands the message on (`handoff: true`): a double arrowhead."""
    drop: bool = False
    """It closes the latest open interruption (`drop: true`): a bar at its tail."""


def dot_source(
    graph: Graph,
    highlight: Highlight | None = None,
    *,
    ids: bool = False,
    opened: frozenset[str] = frozenset(),
    whole_labels: bool = False,
) -> str:
    """The graph in Graphviz's DOT language; with `highlight`, covered exits in green and
    uncovered ones dashed red, states never entered greyed. With `ids`, element ids on
    every state and edge; the `graph` states in `opened` (by qualified name) drawn as
    clusters of their sub-graph's states. With `whole_labels` (a page one zooms, the
    studio's), exit labels are written in full, as legible as the states' names; else cut
    after two lines, smaller (a picture seen whole)."""
    edge_size = 12 if whole_labels else 9
    lines = [
        f"digraph {_quote(graph.name)} {{",
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.4, ranksep=0.5, bgcolor=white];',
        '  node [fontname="Helvetica", fontsize=11, style="filled", penwidth=1.2];',
        f'  edge [fontname="Helvetica", fontsize={edge_size}, color="#475569", arrowsize=0.7];',
    ]
    label_lines = None if whole_labels else 2
    scope = Scope(Graphs(graph), ids=ids, opened=opened, label_lines=label_lines)
    lines += scope.body(graph, highlight)
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Scope:
    """Where one graph's states are drawn: the root (names as written), or the cluster of
    the `graph` state that runs it (names qualified with its file key, as a session names
    them; its START is that state, its END and ANY its own)."""

    graphs: Graphs
    key: str = ""
    entry: str = START
    ids: bool = False
    opened: frozenset[str] = frozenset()
    label_lines: int | None = 2
    """Lines an exit's label is cut after (None: never cut)."""

    def name(self, state: str) -> str:
        if SEPARATOR in state and self.key:  # a move across files, relative to this one
            file, _, target = state.rpartition(SEPARATOR)
            return qualify(self.graphs.child_key(self.key, file), target)
        if not self.key:
            return state
        if state == START:
            return self.entry
        ends = (END, ANY, RESUME)
        return f"{self.key}{SEPARATOR}{state}" if state in ends else qualify(self.key, state)

    def body(self, graph: Graph, highlight: Highlight | None) -> list[str]:
        """The nodes and edges of `graph` in this scope (opened sub-graphs within)."""
        lines = [] if self.key else [self._node_line(START, START_STYLE)]
        lines.append(self._node_line(END, END_STYLE))
        if graph.global_exits or graph.limits.on_limit:  # beside START: they hold from the start
            lines.append(self._node_line(ANY, ANY_STYLE))
            if not self.key:
                lines.append(f"  {{rank=same; {_quote(START)}; {_quote(ANY)}}}")
        drawn = list(edges(graph, self.label_lines))
        if any(edge.target == RESUME for edge in drawn):
            lines.append(self._node_line(RESUME, RESUME_STYLE))
        centred = hubs(graph)
        for name, state in graph.states.items():
            lines += self._state(name, state, highlight, hub=name in centred)
        for desks in centred.values():  # side by side under their hub
            names = [self.name(d) for d in desks]
            if len(names) > 1 and not self.opened.intersection(names):
                lines.append(f"  {{rank=same; {'; '.join(map(_quote, names))}}}")
        back = ways_back(graph, centred)
        lines += [self._edge_line(e, highlight, (e.source, e.target) in back) for e in drawn]
        return lines

    def _state(
        self, name: str, state: AnyState, highlight: Highlight | None, hub: bool = False
    ) -> list[str]:
        drawn = self.name(name)
        line = _node(drawn, state, highlight, self.ids, label=name, hub=hub)
        if not isinstance(state, GraphState) or drawn not in self.opened:
            return [line]
        key = self.graphs.child_key(self.key, state.graph)
        inner = Scope(self.graphs, key, drawn, self.ids, self.opened, self.label_lines)
        title = _quote(f"{name} ‹graph: {state.graph}›")
        head = f"  subgraph {_quote('cluster_' + drawn)} {{"
        look = 'style="rounded,filled"; fillcolor="#fdf2f8"; color="#db2777";'
        return [
            head,
            f"  label={title}; {look}",
            line,
            *inner.body(self.graphs.get(key), None),
            "  }",
        ]

    def _node_line(self, name: str, style: str) -> str:
        drawn = self.name(name)
        if self.key and name == END:  # where the sub-graph hands back: small
            style = style.replace("shape=doublecircle", "shape=doublecircle, fontsize=7")
        attrs = f"{style}, id={_quote(node_id(drawn))}" if self.ids else style
        return f"  {_quote(drawn)} [{attrs}];"

    def _edge_line(self, edge: _Edge, highlight: Highlight | None, back: bool = False) -> str:
        source, target = self.name(edge.source), self.name(edge.target)
        attrs = [f"label={_quote(edge.label)}"] if edge.label else []
        look = _look(edge, highlight)
        attrs += [look] if look else []
        if edge.resume:  # there, and back where it left
            attrs.append("dir=both, arrowtail=odot")
        elif edge.drop:  # the way back to the interrupted state cut
            attrs.append("dir=both, arrowtail=tee")
        if edge.handoff:  # the message goes on with it
            attrs.append("arrowhead=veevee")
        if back:  # back to a hub: drawn, but the hub stays above its desks
            attrs.append("constraint=false")
        if self.ids:
            attrs.append(f"id={_quote(edge_id(source, edge.exit_id))}")
        return f"  {_quote(source)} -> {_quote(target)} [{', '.join(attrs)}];"


START_STYLE = 'shape=circle, label="START", fillcolor="#0f172a", fontcolor=white'
END_STYLE = 'shape=doublecircle, label="END", fillcolor="#0f172a", fontcolor=white'
RESUME_STYLE = 'shape=circle, label="RESUME", fillcolor="#0f766e", fontcolor=white, fontsize=9'
"""Where a detour ends: the conversation goes back to the state it left."""


def node_id(name: str) -> str:
    """The element id of a drawn state (START, END and ANY too), by its qualified name."""
    return "s-" + quote(name, safe="")


def edge_id(source: str, exit_id: str) -> str:
    """The element id of a drawn edge, by the key `cgraph.draw.taken` gives an exit."""
    return f"e-{quote(source, safe='')}-{quote(exit_id, safe='')}"


def ways_back(graph: Graph, centred: dict[str, tuple[str, ...]]) -> set[tuple[str, str]]:
    """(state, hub) of every exit back to a hub from a state the hub leads to, however
    far: the edges that would otherwise rank a hub below its own desks."""
    back = set()
    for hub in centred:
        seen, todo = {hub}, [hub]
        while todo:
            for target in targets_of(graph.states[todo.pop()]):
                if target in graph.states and target not in seen:
                    seen.add(target)
                    todo.append(target)
        back |= {(name, hub) for name in seen if hub in targets_of(graph.states[name])}
    return back


def edges(graph: Graph, lines: int | None = 2) -> Iterator[_Edge]:
    """Every declared edge: the start entries, the global exits and `limits.on_limit` (from
    `ANY`), each state's exits, `on_error` and `on_limit`; labels cut after `lines`."""
    yield from _start_edges(graph, lines)
    for exit_id, exit_ in global_exits(graph):
        label = _wrap(exit_.shown, lines=lines)
        yield _Edge(
            ANY,
            exit_.next_state,
            exit_id,
            label,
            resume=exit_.resume,
            handoff=exit_.handoff,
            drop=exit_.drop,
        )
    for guard, target in graph.limits.on_limit.items():
        yield _Edge(ANY, target, limit_key(guard), limit_key(guard), route=True)
    for name, state in graph.states.items():
        routed = bool(state.exit_conditions)  # else one unnamed `next_state`
        for option in exit_options(state):
            label = _wrap(option.description, lines=lines) if routed else ""
            yield _Edge(
                name,
                option.target,
                option.id,
                label,
                resume=option.resume,
                handoff=option.handoff,
                drop=option.drop,
            )
        on_error = state.on_error
        if on_error:
            yield _Edge(name, on_error, ERROR_ROUTE, ERROR_ROUTE, route=True)
        if state.on_limit:
            route = own_limit(graph, name)
            yield _Edge(name, state.on_limit, route, route, route=True)


def _start_edges(graph: Graph, lines: int | None) -> Iterator[_Edge]:
    """One edge per start state, labelled with the conditions of a conditional start."""
    if isinstance(graph.start, str):
        yield _Edge(START, graph.start, graph.start, "")
        return
    conditions: dict[str, list[str]] = {}
    for entry in graph.start:
        conditions.setdefault(entry.state, []).append(entry.when)
    for target, whens in conditions.items():
        yield _Edge(START, target, target, _wrap(" or ".join(whens), lines=lines))


def _node(
    name: str,
    state: AnyState,
    highlight: Highlight | None,
    ids: bool = False,
    label: str = "",
    hub: bool = False,
) -> str:
    shape, fill = STYLES[state.type]
    shown = label or name
    attrs = f'shape={shape}, label="{shown}\\n‹{state.type.replace("_", " ")}›", fillcolor="{fill}"'
    if hub:  # a hub: its desks hand messages back to it
        attrs += ", peripheries=2"
    if highlight is not None and name not in highlight.entered:
        attrs += ', color="#9ca3af", fontcolor="#6b7280", style="filled,dashed"'
    elif highlight is not None:
        attrs += f', color="{COVERED}", penwidth=2'
    if ids:
        opens = " opens" if isinstance(state, GraphState) else ""
        attrs += f", id={_quote(node_id(name))}, class={_quote('state' + opens)}"
    return f"  {_quote(name)} [{attrs}];"


def _look(edge: _Edge, highlight: Highlight | None) -> str:
    """A route stays dotted when coverage colours it: it is still not the model's choice."""
    dotted = ", style=dotted" if edge.route else ""
    if highlight is None or (edge.source == START and (START, edge.exit_id) not in highlight.taken):
        # A start entry is no exit of a state: untaken, it is drawn plain, not as a miss.
        return f'color="{ROUTE}", fontcolor="{ROUTE}"{dotted}' if edge.route else ""
    if (edge.source, edge.exit_id) in highlight.taken:
        return f'color="{COVERED}", fontcolor="{COVERED}", penwidth=2.4{dotted}'
    missed = "style=dotted, penwidth=1.8" if edge.route else "style=dashed"  # thin dots hide
    return f'color="{UNCOVERED}", fontcolor="{UNCOVERED}", {missed}'


def _wrap(text: str, width: int = 26, lines: int | None = 2) -> str:
    """Long exit descriptions as a short label: `lines` at most, then an ellipsis."""
    wrapped = textwrap.wrap(text, width) or [""]
    if lines is not None and len(wrapped) > lines:
        wrapped = [*wrapped[: lines - 1], wrapped[lines - 1][: width - 1] + "…"]
    return "\n".join(wrapped)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render(dot: str, fmt: str) -> bytes:
    """`dot -Tfmt` on the DOT text; `ConfigError` with an install hint when it is missing."""
    program = shutil.which("dot")
    if program is None:
        raise ConfigError(INSTALL_HINT)
    try:
        done = subprocess.run(
            [program, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigError(f"Graphviz's `dot` failed: {err}") from err
    if done.returncode != 0:
        raise ConfigError(f"Graphviz's `dot` failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def session_highlight(store: object, session_id: str, graph: Graph | None = None) -> Highlight:
    """What one stored conversation did: its exits taken and states entered (root graph;
    with `graph`, a global exit taken is marked on its edge from `ANY`, and a session of
    another graph is a `SessionError`)."""
    from cgraph.runtime.log.reading import audit, effective
    from cgraph.wiring.stores import open_store

    backend = open_store(store)
    try:
        ran = backend.load(session_id).info.graph_name
        log = backend.events(session_id)  # the whole log: every turn it took
    finally:
        backend.close()
    if graph is not None and ran and ran != graph.name:
        raise SessionError(f"session `{session_id}` ran graph `{ran}`, not `{graph.name}`")
    records = audit(effective(log))
    if graph is None:
        taken = frozenset((r.from_state, r.exit_id) for r in records)
    else:
        taken = frozenset(exits_taken(graph, records))
    entered = frozenset(r.to_state for r in records) | frozenset(r.from_state for r in records)
    return Highlight(taken=taken, entered=entered)


def picture(graph: Graph, fmt: str, highlight: Highlight | None = None) -> bytes:
    """The graph in one of `FORMATS` (`mermaid` ignores the highlight)."""
    if fmt == "mermaid":
        from cgraph.spec.topology import mermaid

        return mermaid(graph).encode()
    dot = dot_source(graph, highlight)
    return dot.encode() if fmt == "dot" else render(dot, fmt)
