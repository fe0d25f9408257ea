"""One graph as a page draws it and lights it: the SVG with element ids (drawn by Graphviz
once per set of opened sub-graphs), and what a conversation did as the ids to light — the
state it is in, the states it entered, the exits it took, and the latest turn's.

A state inside a `graph` state whose cluster is closed is shown by that `graph` state; a
state of a file moved into across files (`file#state`, under no `graph` state) by its own
name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cgraph.draw.picture import dot_source, edge_id, node_id, render
from cgraph.draw.taken import exits_taken
from cgraph.errors import CgraphError
from cgraph.runtime.routes.graphs import Graphs
from cgraph.runtime.state.records import TransitionRecord
from cgraph.spec.model import Graph, GraphState
from cgraph.spec.names import END, qualify, split


@dataclass(frozen=True, slots=True)
class Focus:
    """Element ids of the drawing to light (ids absent from it are ignored by the page)."""

    current: str
    entered: tuple[str, ...]
    taken: tuple[str, ...]
    path: tuple[str, ...]
    """The states the latest turn went through."""
    latest: tuple[str, ...]
    """The exits the latest turn took."""

    def as_json(self) -> dict[str, Any]:
        return {
            "current": self.current,
            "entered": list(self.entered),
            "taken": list(self.taken),
            "path": list(self.path),
            "latest": list(self.latest),
        }


class Drawing:
    """One version of a graph, drawn for a page."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.graphs = Graphs(graph)
        self.owners = _owners(self.graphs)
        """Sub-graph file key → the qualified name of the `graph` state that runs it."""
        self._svg: dict[frozenset[str], bytes] = {}
        self._lock = threading.Lock()

    def svg(self, opened: frozenset[str] = frozenset()) -> bytes:
        """The SVG with the `graph` states in `opened` drawn as clusters (Graphviz runs
        once per set; `ConfigError` when it is missing or fails)."""
        with self._lock:
            if opened not in self._svg:
                shown = opened & set(self.owners.values())
                dot = dot_source(self.graph, ids=True, opened=shown, whole_labels=True)
                self._svg[opened] = render(dot, "svg")
            return self._svg[opened]

    def focus(
        self,
        taken: Sequence[TransitionRecord],
        latest: Sequence[TransitionRecord],
        path: Sequence[str],
        state: str,
        opened: frozenset[str] = frozenset(),
    ) -> Focus:
        """What to light for a conversation whose transitions in effect are `taken`, whose
        latest turn took `latest` through `path`, and which is now in `state` (END once
        completed)."""
        entered = [t.to_state for t in taken if t.to_state != END] + [state]
        return Focus(
            current=node_id(self.shown(state, opened)),
            entered=self._nodes(entered, opened),
            taken=self._edges(taken),
            path=self._nodes(path, opened),
            latest=self._edges(latest),
        )

    def shown(self, name: str, opened: frozenset[str]) -> str:
        """The drawn state that stands for `name`: itself, else its closed cluster's."""
        while not self._open(split(name)[0], opened):
            owner = self.owners.get(split(name)[0])
            if owner is None:
                return name
            name = owner
        return name

    def _open(self, key: str, opened: frozenset[str]) -> bool:
        owner = self.owners.get(key)
        return not key or (owner in opened and self._open(split(owner)[0], opened))

    def _nodes(self, names: Iterable[str], opened: frozenset[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(node_id(self.shown(n, opened)) for n in names))

    def _edges(self, transitions: Sequence[TransitionRecord]) -> tuple[str, ...]:
        return tuple(sorted(edge_id(*key) for key in exits_taken(self.graph, transitions)))


def _owners(graphs: Graphs) -> dict[str, str]:
    """Each sub-graph file reachable through `graph` states, and the state that runs it
    (the first one met, root first; a file that does not load is left out)."""
    found: dict[str, str] = {}
    keys = [""]
    while keys:
        key = keys.pop(0)
        try:
            graph = graphs.get(key)
        except CgraphError:  # a broken sub-graph: lint says why; the picture shows the rest
            continue
        for name, state in graph.states.items():
            if isinstance(state, GraphState):
                child = graphs.child_key(key, state.graph)
                if child not in found and child:
                    found[child] = qualify(key, name)
                    keys.append(child)
    return found
