"""A graph drawn as a picture with Graphviz: states shaped and coloured by type, only the
declared edges, START and END; optionally what tests or a conversation covered. Global
exits are drawn once, from an `ANY` node (the topology's "from every state"), and so are
`limits.on_limit` routes; a state's `on_error` and `on_limit` routes are dotted edges.

`dot_source` writes the DOT text (pure); `render` runs Graphviz's `dot` program on it.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field

from cgraph.draw.taken import (
    ERROR_ROUTE,
    exits_taken,
    global_exits,
    limit_key,
    own_limit,
)
from cgraph.errors import ConfigError, SessionError
from cgraph.runtime.routes.exits import exit_options
from cgraph.spec.model import AnyState, Graph
from cgraph.spec.names import END, START
from cgraph.spec.topology import ANY

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


def dot_source(graph: Graph, highlight: Highlight | None = None) -> str:
    """The graph in Graphviz's DOT language; with `highlight`, covered exits in green and
    uncovered ones dashed red, states never entered greyed."""
    lines = [
        f"digraph {_quote(graph.name)} {{",
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.4, ranksep=0.5, bgcolor=white];',
        '  node [fontname="Helvetica", fontsize=11, style="filled", penwidth=1.2];',
        '  edge [fontname="Helvetica", fontsize=9, color="#475569", arrowsize=0.7];',
        f'  {_quote(START)} [shape=circle, label="START", fillcolor="#0f172a", fontcolor=white];',
        f'  {_quote(END)} [shape=doublecircle, label="END", fillcolor="#0f172a", fontcolor=white];',
    ]
    if graph.global_exits or graph.limits.on_limit:  # beside START: they hold from the start
        lines.append(f"  {_quote(ANY)} [{ANY_STYLE}];")
        lines.append(f"  {{rank=same; {_quote(START)}; {_quote(ANY)}}}")
    lines += [_node(name, state, highlight) for name, state in graph.states.items()]
    lines += [_edge_line(edge, highlight) for edge in edges(graph)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def edges(graph: Graph) -> Iterator[_Edge]:
    """Every declared edge: the start entries, the global exits and `limits.on_limit` (from
    `ANY`), each state's exits, `on_error` and `on_limit`."""
    yield from _start_edges(graph)
    for exit_id, exit_ in global_exits(graph):
        yield _Edge(ANY, exit_.next_state, exit_id, _wrap(exit_.label))
    for guard, target in graph.limits.on_limit.items():
        yield _Edge(ANY, target, limit_key(guard), limit_key(guard), route=True)
    for name, state in graph.states.items():
        routed = bool(getattr(state, "exit_conditions", None))  # else one unnamed `next_state`
        for option in exit_options(state):
            label = _wrap(option.description) if routed else ""
            yield _Edge(name, option.target, option.id, label)
        on_error = getattr(state, "on_error", None)
        if on_error:
            yield _Edge(name, on_error, ERROR_ROUTE, ERROR_ROUTE, route=True)
        if state.on_limit:
            route = own_limit(graph, name)
            yield _Edge(name, state.on_limit, route, route, route=True)


def _start_edges(graph: Graph) -> Iterator[_Edge]:
    """One edge per start state, labelled with the conditions of a conditional start."""
    if isinstance(graph.start, str):
        yield _Edge(START, graph.start, graph.start, "")
        return
    conditions: dict[str, list[str]] = {}
    for entry in graph.start:
        conditions.setdefault(entry.state, []).append(entry.when)
    for target, whens in conditions.items():
        yield _Edge(START, target, target, _wrap(" or ".join(whens)))


def _node(name: str, state: AnyState, highlight: Highlight | None) -> str:
    shape, fill = STYLES[state.type]
    label = f"{name}\\n‹{state.type.replace('_', ' ')}›"
    attrs = f'shape={shape}, label="{label}", fillcolor="{fill}"'
    if highlight is not None and name not in highlight.entered:
        attrs += ', color="#9ca3af", fontcolor="#6b7280", style="filled,dashed"'
    elif highlight is not None:
        attrs += f', color="{COVERED}", penwidth=2'
    return f"  {_quote(name)} [{attrs}];"


def _edge_line(edge: _Edge, highlight: Highlight | None) -> str:
    attrs = [f"label={_quote(edge.label)}"] if edge.label else []
    look = _look(edge, highlight)
    attrs += [look] if look else []
    return f"  {_quote(edge.source)} -> {_quote(edge.target)} [{', '.join(attrs)}];"


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


def _wrap(text: str, width: int = 26, lines: int = 2) -> str:
    """Long exit descriptions as a short label: two lines at most, then an ellipsis."""
    wrapped = textwrap.wrap(text, width) or [""]
    if len(wrapped) > lines:
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
    from cgraph.compose import open_store
    from cgraph.runtime.log.reading import audit, effective

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
