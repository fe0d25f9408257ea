"""The `cgraph` command: a thin layer that parses options and calls the library.

Only this module (and `cli_*` modules) import typer and rich. Heavy parts are
imported inside the commands that need them so `cgraph --help` and `cgraph lint`
stay fast.
"""

from __future__ import annotations

import gc
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cgraph.cli import exit_now, not_a_graph_file
from cgraph.cli.memory import memory_app
from cgraph.cli.render import render as render_command
from cgraph.cli.serve import serve as serve_command
from cgraph.cli.serve import store_app
from cgraph.cli.shown import printable, shown
from cgraph.cli.simulate import simulate as simulate_command
from cgraph.cli.studio import studio as studio_command
from cgraph.cli.test import test as test_command
from cgraph.cli.usage import (
    PLAIN,
    AllowModule,
    AllowPath,
    Command,
    MaxFileSize,
    choices,
    read_limits,
    trust,
)
from cgraph.lint.report import REPORTERS

app = typer.Typer(
    name="cgraph",
    help="Context graphs in YAML: lint them, draw them, run them as conversations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=PLAIN,
)


def schema() -> None:
    """Print the JSON Schema of the context-graph format."""
    from cgraph.spec.schema import dumps, published

    sys.stdout.write(dumps(published()))


class StructuredMode(StrEnum):
    """`model: structured:` values (a test keeps them equal to the model's)."""

    auto = "auto"
    json_schema = "json_schema"
    tool = "tool"
    json_object = "json_object"


Format = StrEnum("Format", [(name, name) for name in REPORTERS])  # type: ignore[misc]
"""Output formats of `cgraph lint`: the reporters' names, so a new reporter is an option."""
TEXT = Format("text")


def lint(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Graph files and folders (folders are searched for *.yaml, *.yml, *.json).",
            show_default=False,
            metavar="PATH",
        ),
    ],
    output: Annotated[
        Format, typer.Option("--format", "-f", metavar=choices(Format), help="Output format.")
    ] = TEXT,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too.")] = False,
    only_graphs: Annotated[
        bool,
        typer.Option(
            "--only-graphs",
            help="Skip named files without a top-level `cgraph:` key too (for pre-commit).",
        ),
    ] = False,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Check graph files: exit 0 when clean, 1 when problems were found, 2 on a usage error."""
    from cgraph.lint.report import reporter
    from cgraph.lint.walk import lint_paths

    allowed, limits = trust(allow_module, allow_path), read_limits(max_file_size)
    result = lint_paths(paths, only_graphs=only_graphs, trust=allowed, limits=limits)
    out = shown(sys.stdout, json=output.value in ("json", "sarif"))
    reporter(output.value, out, shown(sys.stderr), strict=strict).report(result)
    if sys.argv[1:2] == ["lint"]:  # the command itself, not a test calling the app
        exit_now(result.exit_code(strict))
    raise typer.Exit(result.exit_code(strict))


def topology(
    graph: Annotated[
        Path, typer.Argument(help="The graph file.", show_default=False, metavar="GRAPH")
    ],
    check: Annotated[
        bool,
        typer.Option("--check", help="Compare the authored `topology:` with the states instead."),
    ] = False,
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Draw the graph as a Mermaid flowchart instead.")
    ] = False,
    max_file_size: MaxFileSize = None,
) -> None:
    """Print the abstract topology derived from a graph's states (or draw it)."""
    from cgraph.lint.walk import topology_of

    problem = not_a_graph_file(graph)
    if problem:
        sys.stderr.write(f"error: {graph}: {problem}\n")
        raise typer.Exit(2)
    text, diagnostics = topology_of(
        graph, check=check, mermaid=mermaid, limits=read_limits(max_file_size)
    )
    for diag in diagnostics:
        sys.stderr.write(printable(diag.render(), lines=True) + "\n")
    sys.stdout.write(printable(text, lines=True))
    raise typer.Exit(1 if diagnostics else 0)


def run(
    graph: Annotated[
        Path, typer.Argument(help="The graph file to run.", show_default=False, metavar="GRAPH")
    ],
    model: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="A litellm model, `semantic`, or `replay:FILE`."),
    ] = None,
    api_base: Annotated[
        str | None, typer.Option(metavar="URL", help="Base URL of an OpenAI-compatible server.")
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            metavar="ID",
            help="User id; memories are kept per user. [default: local, or the session's user]",
            show_default=False,
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            metavar="ID", help="Resume this session id (a new name starts a session with it)."
        ),
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            metavar="DIR|URL",
            help="Folder for sessions and memories, or a postgresql:// URL for the sessions.",
        ),
    ] = ".cgraph",
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Print one JSON object per turn.")] = False,
    record: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Save every LLM exchange to FILE.")
    ] = None,
    structured: Annotated[
        StructuredMode | None,
        typer.Option(
            metavar=choices(StructuredMode),
            help="How the answer's schema is sent (default: the graph's, else auto).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            metavar="SECONDS",
            help="Seconds a turn may wait for the model, retries included.",
        ),
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(min=16, metavar="N", help="Cap on each answer.")
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(min=0, max=10, metavar="N", help="Retries of a transient failure."),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Append each turn's spans to FILE (JSON lines)."),
    ] = None,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Talk with a graph: an interactive session, or one message per line from stdin."""
    from cgraph.cli.opening import RunOptions
    from cgraph.cli.run import run_command

    options = RunOptions(
        graph=graph,
        trust=trust(allow_module, allow_path),
        limits=read_limits(max_file_size),
        store=store,
        model=model,
        api_base=api_base,
        user=user,
        session=session,
        record=record,
        structured=structured.value if structured else None,
        timeout=timeout,
        max_tokens=max_tokens,
        retries=retries,
        trace=trace,
    )
    exit_now(run_command(options, jsonl=jsonl))


def lsp(
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Start the language server on stdin and stdout, for an editor to talk to.

    Diagnostics as you type, completion, go to definition, references, hover, rename,
    quick fixes, the outline and a code lens that runs a state's tests, for graph files and
    their *.test.yaml files. Editors start it themselves: see the editor settings in the
    docs (Linting and editors)."""
    from cgraph.lsp.server import serve as serve_lsp

    serve_lsp(trust(allow_module, allow_path), read_limits(max_file_size))


# Listed in `cgraph --help` in the order of the work: check, look, talk, test, serve, then
# the memories a run kept and the format's schema.
COMMANDS = (
    ("lint", lint, "Check graph files for errors and warnings."),
    ("topology", topology, "Print the map of a graph's states (or check the authored one)."),
    ("render", render_command, "Draw a graph as SVG, PNG, dot or Mermaid."),
    ("run", run, "Talk with a graph, in the terminal or one message per stdin line."),
    ("test", test_command, "Run conversation tests (*.test.yaml)."),
    ("simulate", simulate_command, "Talk to a graph as simulated users (*.sim.yaml)."),
    ("studio", studio_command, "Chat with a graph in the browser and watch it move."),
    ("serve", serve_command, "Serve graphs over HTTP, on SQLite or PostgreSQL."),
    ("lsp", lsp, "Start the language server an editor talks to (stdio)."),
)
for _name, _command, _short in COMMANDS:
    app.command(name=_name, cls=Command, short_help=_short)(_command)
app.add_typer(memory_app, name="memory", short_help="List, export and delete kept memories.")
app.add_typer(store_app, name="store", short_help="Create or upgrade a session store's tables.")
app.command(name="schema", cls=Command)(schema)


def main() -> None:
    if sys.argv[1:2] not in (["lint"], ["run"]):  # see cgraph/cli/__init__.py
        gc.enable()
    app()


if __name__ == "__main__":
    main()
