"""Does the authored `topology:` agree with the states? Honours `...` abbreviations.

Edges are compared as (source, target) pairs, counted: labels are free text, because
authors shorten exit descriptions in the map ("(Client ready) -> ...").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from cgraph.diagnostics import DataPath, Diagnostic, Fix
from cgraph.lint.structure import GraphContext, anywhere_located, start_targets
from cgraph.spec.load import did_you_mean, fix_for
from cgraph.spec.model import TYPE_LETTERS, is_cross
from cgraph.spec.names import END, RESUME, START
from cgraph.spec.read import Document
from cgraph.spec.topology import ANY, RESUMABLE, Topology, graph_edges, parse

_PATH: DataPath = ("topology",)
_At = Callable[..., Diagnostic]
"""`at(line, column, code, message, hint, fix=None)`: a diagnostic in the topology text."""


@dataclass(frozen=True)
class _Lines:
    """Maps a line of the topology text to its place in the file."""

    first: int  # file line (1-based) of the text's first line; 0 if lines are not exact
    indent: int
    fallback: tuple[int, int]

    def at(self, line: int, column: int) -> tuple[int, int]:
        if not self.first:
            return self.fallback
        return self.first + line - 1, self.indent + column


def _lines(doc: Document) -> _Lines:
    node = doc.node_at(_PATH)
    fallback = doc.locate(_PATH)
    if node is None or getattr(node, "style", None) != "|":
        return _Lines(0, 0, fallback)
    first = node.start_mark.line + 1  # 0-based line below the `|`
    indent = 0
    for text in doc.text.splitlines()[first : node.end_mark.line + 1]:
        if text.strip():
            indent = len(text) - len(text.lstrip(" "))
            break
    return _Lines(first + 1, indent, fallback)


def check_topology(ctx: GraphContext) -> Iterator[Diagnostic]:
    text = ctx.graph.topology
    if text is None:
        return
    topology = parse(text)
    lines = _lines(ctx.doc)

    def at(
        line: int, column: int, code: str, message: str, hint: str, fix: Fix | None = None
    ) -> Diagnostic:
        file_line, file_column = lines.at(line, column)
        found = ctx.diag(_PATH, code, message, hint, fix=fix)
        return replace(found, line=file_line, column=file_column)

    for problem in topology.problems:
        yield at(
            problem.line,
            problem.column,
            "topology-syntax",
            problem.message,
            "lines are `START(cond) -> [X] s`, `[X] s`, `  (cond) -> [Y] t`, "
            "`[X] a -> [Y] b` or `...`",
        )
    yield from _nodes(ctx, topology, at)
    yield from _extra_edges(ctx, topology, at)
    yield from _missing_edges(ctx, topology)
    yield from _arrows(ctx, topology, at)


def _nodes(ctx: GraphContext, topology: Topology, at: _At) -> Iterator[Diagnostic]:
    names = list(ctx.graph.states)
    for node in topology.nodes:
        state = ctx.graph.states.get(node.name)
        if state is None:
            yield at(
                node.line,
                node.column,
                "topology-unknown-state",
                f"the topology names `{node.name}`, which is not a state",
                did_you_mean(node.name, names) + "use a state id from `states:`",
                fix_for(node.name, names),
            )
            continue
        letter = TYPE_LETTERS[state.type]
        if node.letter != letter:
            yield at(
                node.line,
                node.column,
                "topology-type",
                f"the topology marks `{node.name}` as [{node.letter}], "
                f"but it is a {state.type} state",
                f"write `[{letter}] {node.name}`",
            )


def _graph_pairs(ctx: GraphContext) -> list[tuple[tuple[str, str], DataPath]]:
    pairs = [((START, target), path) for target, path in start_targets(ctx.graph)]
    pairs += [((ANY, target), path) for target, path in anywhere_located(ctx.graph)]
    for name, found in ctx.edges.items():
        pairs.extend(((name, target), path) for target, path in found)
    return pairs


def _known(ctx: GraphContext, name: str) -> bool:
    return name in ctx.graph.states or name in (END, RESUME, START, ANY) or is_cross(name)


def _extra_edges(ctx: GraphContext, topology: Topology, at: _At) -> Iterator[Diagnostic]:
    budget = Counter(pair for pair, _ in _graph_pairs(ctx))
    for edge in topology.edges:
        if not (_known(ctx, edge.source) and _known(ctx, edge.target)):
            continue  # already reported as an unknown state
        if budget[edge.pair] > 0:
            budget[edge.pair] -= 1
            continue
        source = {START: "START has no entry", ANY: "no global exit or `on_limit` leads"}.get(
            edge.source, f"state `{edge.source}` has no exit"
        )
        yield at(
            edge.line,
            1,
            "topology-extra-edge",
            f"the topology shows `{edge.source}` -> `{edge.target}`, "
            f"but {source} to `{edge.target}`",
            f"add that exit to `{edge.source}`, or remove the line from the topology",
        )


def _missing_edges(ctx: GraphContext, topology: Topology) -> Iterator[Diagnostic]:
    shown = Counter(edge.pair for edge in topology.edges)
    written = set(topology.sources) | (
        {START} if any(e.source == START for e in topology.edges) else set()
    )
    for pair, path in _graph_pairs(ctx):
        if shown[pair] > 0:
            shown[pair] -= 1
            continue
        source, target = pair
        if source in topology.abbreviated or (topology.partial and source not in written):
            continue
        where = source if source in (START, ANY) else f"`[{_letter(ctx, source)}] {source}`"
        yield ctx.diag(
            path,
            "topology-missing-edge",
            f"the topology does not show {where} -> `{target}`",
            f"add it under {where} in `topology:`, end that block with `...`, "
            "or add a top-level `...` if the map is deliberately partial",
        )


def _arrows(ctx: GraphContext, topology: Topology, at: _At) -> Iterator[Diagnostic]:
    """An edge written `<->` whose exits do not come back, or `->` where they all do: the
    map a model reads would promise a return the graph does not make, or hide one."""
    comes_back: defaultdict[tuple[str, str], set[bool]] = defaultdict(set)
    for edge in graph_edges(ctx.graph):
        comes_back[edge.pair].add(edge.resume)
    for edge in topology.edges:
        kinds = comes_back.get(edge.pair)
        if not kinds or edge.resume in kinds:
            continue  # an edge the graph lacks is `topology-extra-edge`'s
        arrow, wanted = (RESUMABLE, "->") if edge.resume else ("->", RESUMABLE)
        said = "does not say" if edge.resume else "says"
        yield at(
            edge.line,
            1,
            "topology-arrow",
            f"the topology writes `{edge.source}` {arrow} `{edge.target}`, but the exit "
            f"{said} `resume: true`",
            f"write `{wanted}`: `<->` is an exit that comes back (`resume: true`), `->` one "
            "that does not",
        )


def _letter(ctx: GraphContext, name: str) -> str:
    return TYPE_LETTERS[ctx.graph.states[name].type]
