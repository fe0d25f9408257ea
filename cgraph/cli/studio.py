"""`cgraph studio`: a page to chat with one graph and watch it move, served on this machine
(`cgraph.studio`), opened in the browser once it answers."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from cgraph.cli import not_a_graph_file
from cgraph.cli.usage import AllowModule, AllowPath, MaxFileSize, read_limits, trust
from cgraph.errors import CgraphError

BROWSER_WAIT_SECONDS = 300.0
"""How long the page waits to be opened: the server answers once it has prepared the
graph's model (seconds; the embedding model's first preparation on a new machine, more)."""


def studio(
    graph: Annotated[
        Path, typer.Argument(help="The graph file.", show_default=False, metavar="GRAPH")
    ],
    model: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            metavar="NAME",
            help="A litellm model, `semantic`, or `scripted:FILE`. [default: the graph's, "
            "else the offline semantic mode]",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int, typer.Option(metavar="PORT", min=1, max=65535, help="Port on 127.0.0.1.")
    ] = 8765,
    store: Annotated[
        str, typer.Option(metavar="DIR", help="Folder for sessions and memories.")
    ] = ".cgraph",
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Do not open the page in a browser.")
    ] = False,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Chat with a graph in the browser: the graph drawn beside the chat, the current
    state lit, why each move happened; reload the file as you edit it."""
    from cgraph.studio.main import address, options_for
    from cgraph.studio.main import studio as run_studio
    from cgraph.studio.routes import new_secret

    problem = not_a_graph_file(graph)
    if problem:
        sys.stderr.write(f"error: {graph}: {problem}\n")
        raise typer.Exit(2)
    options = options_for(
        str(graph),
        model=model,
        port=port,
        store=store,
        trust=trust(allow_module, allow_path),
        limits=read_limits(max_file_size),
    )
    secret = new_secret()
    if not no_browser:
        _open_when_up(options.host, port, address(options, secret))
    try:
        run_studio(options, _say, secret)
    except CgraphError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(1) from None


def _open_when_up(host: str, port: int, url: str) -> None:
    """Open `url` in the browser once the port takes connections (in the background)."""

    def wait_then_open() -> None:
        deadline = time.monotonic() + BROWSER_WAIT_SECONDS
        while time.monotonic() < deadline:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
            except OSError:
                time.sleep(0.1)
                continue
            import webbrowser

            webbrowser.open(url)
            return

    threading.Thread(target=wait_then_open, daemon=True).start()


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
