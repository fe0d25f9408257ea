"""Pictures drawn at every build: the example graphs and the site's own diagrams.

Each graph of `graphs/` is drawn as `cgraph render GRAPH` draws it (the same function,
`cgraph.draw.picture.picture`, with Graphviz's `dot`), and every `*.dot` file under
`docs/` (the architecture diagram) is rendered to an SVG beside it. Nothing is written
into `docs/`: the hook hands the SVGs to MkDocs as generated files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cgraph.draw.picture import picture, render
from cgraph.spec.load import load_graph

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GRAPHS = ROOT / "graphs"


def example_graphs() -> list[Path]:
    """The example graphs, in name order."""
    return sorted(GRAPHS.glob("*.yaml"))


def graph_picture_uri(graph: Path) -> str:
    return f"img/graphs/{graph.stem}.svg"


def pictures() -> Iterator[tuple[str, bytes]]:
    """(site path, SVG) for every picture drawn at build."""
    for graph in example_graphs():
        yield graph_picture_uri(graph), picture(load_graph(graph), "svg")
    for source in sorted(DOCS.glob("**/*.dot")):
        uri = source.relative_to(DOCS).with_suffix(".svg").as_posix()
        yield uri, render(source.read_text(encoding="utf-8"), "svg")


def gallery() -> str:
    """Every example graph: its name, its description and its picture (the examples page)."""
    lines = []
    for graph in example_graphs():
        spec = load_graph(graph)
        lines += [f"### `{graph.name}`", ""]
        if spec.description:
            lines += [spec.description, ""]
        lines += [f"![{spec.name}]({graph_picture_uri(graph)})", ""]
    return "\n".join(lines)
