"""The graphs a session runs in: the root file and the sub-graphs it enters, by key,
and the abstract topology each one shows to decisions and reflections."""

from __future__ import annotations

import os.path
from pathlib import Path

from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph
from cgraph.spec.read import read_file
from cgraph.spec.topology import derive


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
            graph = self._graphs[key] = load_graph(self.folder / key)
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
    line, column = read_file(graph.source).locate(path)
    return f"{graph.source}:{line}:{column}"
