"""`cgraph render`: draw a graph (svg, png, dot or mermaid), optionally what one stored
conversation did."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cgraph.cli import cannot_write, not_a_graph_file
from cgraph.cli.usage import MaxFileSize, choices, read_limits, trust


class PictureFormat(StrEnum):
    """Formats of `cgraph render` (`cgraph.draw.picture.FORMATS`)."""

    svg = "svg"
    png = "png"
    dot = "dot"
    mermaid = "mermaid"


def render(
    graph: Annotated[
        Path, typer.Argument(help="The graph file.", show_default=False, metavar="GRAPH")
    ],
    output: Annotated[
        PictureFormat,
        typer.Option("--format", "-f", metavar=choices(PictureFormat), help="Picture format."),
    ] = PictureFormat.svg,
    out: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
    ] = None,
    session: Annotated[
        str | None, typer.Option(metavar="ID", help="Highlight what this stored conversation did.")
    ] = None,
    store: Annotated[
        Path, typer.Option(metavar="DIR", help="Folder of the stored sessions.")
    ] = Path(".cgraph"),
    max_file_size: MaxFileSize = None,
) -> None:
    """Draw a graph with Graphviz: states shaped and coloured by type, START and END."""
    from cgraph.draw.picture import picture, session_highlight
    from cgraph.errors import CgraphError, GraphError
    from cgraph.spec.load import load_graph

    problem = not_a_graph_file(graph)
    if problem:
        sys.stderr.write(f"error: {graph}: {problem}\n")
        raise typer.Exit(2)
    if session and not store.is_dir():
        sys.stderr.write(f"error: {store}: no such store folder\n")
        raise typer.Exit(2)
    try:
        spec = load_graph(graph, trust=trust(), limits=read_limits(max_file_size))
        highlight = session_highlight(store, session, spec) if session else None
        data = picture(spec, output.value, highlight)
    except GraphError as err:
        sys.stderr.write(f"{err}\n")
        raise typer.Exit(2) from err
    except CgraphError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(2) from err
    if out is not None:
        try:
            out.write_bytes(data)
        except OSError as err:
            sys.stderr.write(f"error: {cannot_write('--output', out, err)}\n")
            raise typer.Exit(2) from err
    else:
        sys.stdout.buffer.write(data)
