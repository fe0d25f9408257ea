"""The graphs a session runs in: the root file and the sub-graphs it enters, by key,
and the abstract topology each one shows to decisions and reflections."""

from __future__ import annotations

import os.path
from pathlib import Path

from cgraph.errors import CgraphError, GraphError
from cgraph.spec.load import load_graph
from cgraph.spec.model import CROSS, Graph, GraphState, anywhere_targets, is_cross, targets_of
from cgraph.spec.read import read_file
from cgraph.spec.topology import derive
from cgraph.spec.trust import GRAPH_FILE_HINT, graph_file_problem


class Graphs:
    """The root graph and the sub-graphs it enters, by key (file relative to the root)."""

    def __init__(self, root: Graph) -> None:
        self.root = root
        source = root.source.resolve() if root.source else None
        self.folder = source.parent if source else Path.cwd()
        self._graphs: dict[str, Graph] = {"": root}

    def get(self, key: str) -> Graph:
        graph = self._graphs.get(key)
        if graph is None:
            root = self.root
            outside = graph_file_problem(self.folder / key, self.folder, root.trust)
            if outside is not None:  # lint refuses it first; the runtime never reads it
                raise GraphError(f"graph file `{key}` {outside}; {GRAPH_FILE_HINT}")
            # A sub-graph is held to what the root was loaded with.
            path = self.folder / key
            graph = load_graph(path, trust=root.trust, limits=root.read_limits)
            self._graphs[key] = graph
        return graph

    def child_key(self, parent_key: str, relative: str) -> str:
        """The key of `relative` (as written in a `graph` state of `parent_key`)."""
        parent = (self.folder / parent_key).parent if parent_key else self.folder
        target = (parent / relative).resolve()
        try:
            return target.relative_to(self.folder).as_posix()
        except ValueError:
            # Outside the root's folder (`../shared/x.yaml`): a relative key still works.
            return Path(os.path.relpath(target, self.folder)).as_posix()

    def folder_of(self, graph: Graph) -> Path:
        return graph.source.resolve().parent if graph.source else self.folder

    def reachable(self) -> list[Graph]:
        """Every graph the session may enter, the root first, each once: the files its
        `graph` states and `file#state` targets name, followed from each graph they load.
        A file that does not load is left out: entering it says why, located."""
        found: dict[str, Graph] = {}
        keys = [""]
        while keys:
            key = keys.pop(0)
            if key in found:
                continue
            try:
                graph = self.get(key)
            except CgraphError:
                continue
            found[key] = graph
            keys += [self.child_key(key, file) for file in linked_files(graph)]
        return list(found.values())


def linked_files(graph: Graph) -> list[str]:
    """The files a graph hands the conversation to (as written, relative to it)."""
    targets = [*anywhere_targets(graph), *(t for s in graph.states.values() for t in targets_of(s))]
    files = [s.graph for s in graph.states.values() if isinstance(s, GraphState)]
    files += [t.partition(CROSS)[0] for t in targets if is_cross(t)]
    return list(dict.fromkeys(files))


def topology_text(graph: Graph) -> str:
    """The graph's authored topology, else one derived from its states."""
    if graph.topology:
        return graph.topology.strip()
    return derive(graph).strip()


def location(graph: Graph, path: tuple[str | int, ...]) -> str:
    """`file:line:col` of the key at `path` in the graph's file (read again: a run-time
    error is rare, and the loaded graph keeps no positions); the graph's name when it was
    built in code."""
    if graph.source is None:
        return f"graph `{graph.name}`"
    line, column = read_file(graph.source, graph.read_limits.file_size).locate(path)
    return f"{graph.source}:{line}:{column}"
