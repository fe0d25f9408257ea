"""The graphs a server serves: every file named or found in a folder, linted once at start
as `cgraph run` lints its graph (an error stops the server with the located diagnostics),
and looked up by their `name`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cgraph.diagnostics import Severity
from cgraph.errors import ConfigError, GraphError
from cgraph.lint.walk import lint_paths
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import did_you_mean, load_graph
from cgraph.spec.model import Graph
from cgraph.spec.names import SIM_KEY, TESTS_KEY
from cgraph.spec.read import read_file
from cgraph.spec.trust import Trust


@dataclass(frozen=True, slots=True)
class Served:
    """One graph as `GET /v1/graphs` shows it."""

    graph: Graph
    file: str
    warnings: int

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.graph.name,
            "file": self.file,
            "lint": "warnings" if self.warnings else "clean",
            "warnings": self.warnings,
            "schema_version": self.graph.cgraph,
            "speaks_first": self.graph.speaks_first,
        }


def unknown(name: str, served: dict[str, Served]) -> str:
    """What a request naming a graph not served is told: the closest name, and all."""
    names = sorted(served)
    return f"no graph `{name}` here; {did_you_mean(name, names)}served: {', '.join(names)}"


def load_served(
    paths: tuple[str, ...], trust: Trust | None = None, limits: ReadLimits | None = None
) -> dict[str, Served]:
    """Every graph under `paths`, by name, linted and loaded with `trust` and `limits`
    (see `load_graph`); `GraphError` with every located lint error, or `ConfigError` when
    no graph is found or two share a name."""
    limits = limits or ReadLimits()
    result = lint_paths([Path(p) for p in paths], trust=trust, limits=limits)
    if result.missing:
        raise ConfigError(f"no such graph file or folder: {', '.join(result.missing)}")
    if result.errors:
        errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
        raise GraphError("the graphs have errors; fix them and serve again", errors)
    served: dict[str, Served] = {}
    for file in result.files:
        if not _is_graph_file(file, limits):
            continue
        graph = load_graph(file, trust=trust, limits=limits)
        warned = sum(d.file == file for d in result.diagnostics)
        if graph.name in served:
            other = served[graph.name].file
            raise ConfigError(f"{file} and {other} are both graph `{graph.name}`; rename one")
        served[graph.name] = Served(graph, file, warned)
    if not served:
        raise ConfigError(f"no graph in {', '.join(paths)} (a graph has a top-level `cgraph:`)")
    return served


def _is_graph_file(file: str, limits: ReadLimits) -> bool:
    """Not a conversation test (`cgraph-test:`) or a sim file (`cgraph-sim:`), which lint
    checks beside the graphs but nobody serves."""
    data = read_file(file, limits.file_size).data
    return not (isinstance(data, dict) and (TESTS_KEY in data or SIM_KEY in data))
