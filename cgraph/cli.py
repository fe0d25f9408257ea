"""The `cgraph` command: a thin layer that parses options and calls the library.

Only this module (and `cli_*` modules) import typer and rich. Heavy parts are
imported inside the commands that need them so `cgraph --help` and `cgraph lint`
stay fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    name="cgraph",
    help="Context graphs in YAML: lint them, draw them, run them as conversations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the context-graph format."""
    from cgraph.schema import dumps, published

    sys.stdout.write(dumps(published()))


@app.command()
def run(
    graph: Annotated[Path, typer.Argument(help="The graph file to run.")],
    model: Annotated[Optional[str], typer.Option(help="A litellm model, `semantic`, or `replay:FILE`.")] = None,  # noqa: UP045
    api_base: Annotated[Optional[str], typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,  # noqa: UP045
    user: Annotated[str, typer.Option(help="User id; memories are kept per user.")] = "local",
    session: Annotated[Optional[str], typer.Option(help="Resume this session id.")] = None,  # noqa: UP045
    store: Annotated[Path, typer.Option(help="Folder for sessions and memories.")] = Path(".cgraph"),
    jsonl: Annotated[bool, typer.Option(help="Print one JSON object per turn.")] = False,
    record: Annotated[Optional[Path], typer.Option(help="Save every LLM exchange to FILE.")] = None,  # noqa: UP045
) -> None:
    """Talk with a graph: an interactive session, or one message per line from stdin."""
    from cgraph.cli_run import run_command

    raise typer.Exit(
        run_command(
            graph=graph, model=model, api_base=api_base, user=user, session=session,
            store=store, jsonl=jsonl, record=record,
        )
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
