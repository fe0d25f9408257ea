"""`cgraph serve` (graphs behind an HTTP API) and `cgraph store migrate`: options parsed
here, everything else in `cgraph.serve` and `cgraph.wiring`, imported only when run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from cgraph.cli.usage import PLAIN, AllowModule, AllowPath, Command, MaxFileSize, read_limits, trust
from cgraph.errors import CgraphError, GraphError


def serve(
    graphs: Annotated[
        list[Path],
        typer.Argument(
            help="Graph files and folders to serve (each is linted first).",
            show_default=False,
            metavar="GRAPH_OR_FOLDER",
        ),
    ],
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", min=0, max=65535)] = 8000,
    store: Annotated[
        str,
        typer.Option(
            metavar="DIR|URL", help="Folder or .sqlite file for sessions, or a postgresql:// URL."
        ),
    ] = ".cgraph",
    memory: Annotated[
        Optional[str],  # noqa: UP045 - typer reads the annotation at run time
        typer.Option(
            metavar="off|chroma://HOST:PORT",
            help="Memories: off, or a Chroma server. [default: embedded, in the store folder]",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="NAME", help="A litellm model, `semantic`, or `scripted:FILE`."),
    ] = None,
    api_base: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--api-base",
            metavar="URL",
            help="Base URL of an OpenAI-compatible server.",
        ),
    ] = None,
    tokens: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(metavar="FILE", help="Lines `TOKEN USER`: bearer tokens and their users."),
    ] = None,
    workers: Annotated[int, typer.Option(metavar="N", min=1, help="Server processes.")] = 1,
    threads: Annotated[
        int,
        typer.Option(metavar="N", min=1, help="Turns one process runs at once."),
    ] = 16,
    wait: Annotated[
        float,
        typer.Option(metavar="SECONDS", min=0, help="How long a message waits for a busy session."),
    ] = 5.0,
    max_in_flight: Annotated[
        int,
        typer.Option(
            metavar="N", min=1, help="Writes (POSTs) one process carries at once; beyond, 503."
        ),
    ] = 2000,
    header_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", min=0.001, help="How long a request's headers may take; then 408."
        ),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", min=0.001, help="How long a request's body may take; then 408."
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(
            metavar="N",
            min=0,
            help="Connections one process keeps open; at the cap the longest idle is closed. "
            "[default: 0, the open-file limit less 128]",
            show_default=False,
        ),
    ] = 0,
    lease: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            min=0.5,
            help="How long a killed server's sessions stay leased to it.",
        ),
    ] = 4.0,
    turns_per_minute: Annotated[
        int, typer.Option(metavar="N", min=1, help="Turns one user may start per minute.")
    ] = 60,
    sessions_per_user: Annotated[
        int, typer.Option(metavar="N", min=1, help="Sessions one user may keep.")
    ] = 100,
    allow_origin: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            metavar="URL",
            help="A web origin (https://app.example) whose pages may call the API; repeat it "
            "for more. [default: none but the server's own]",
            show_default=False,
        ),
    ] = None,
    studio: Annotated[
        bool,
        typer.Option("--studio", help="Also serve the studio page at /studio (one designer)."),
    ] = False,
    metrics: Annotated[
        bool, typer.Option("--metrics/--no-metrics", help="Serve GET /metrics (Prometheus).")
    ] = True,
    metrics_token: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="TOKEN",
            envvar="CGRAPH_METRICS_TOKEN",
            help="A bearer token of its own for /metrics (else it needs none).",
            show_default=False,
        ),
    ] = None,
    log_format: Annotated[
        str, typer.Option(metavar="text|json", help="One line per request and per turn.")
    ] = "text",
    log_content: Annotated[
        bool, typer.Option("--log-content", help="Turn lines carry the message and the reply.")
    ] = False,
    trace_content: Annotated[
        bool,
        typer.Option("--trace-content", help="Model-call spans carry the prompt and the answer."),
    ] = False,
    webhook: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            metavar="'URL [events=E,…] [secret=env:NAME|file:PATH]'",
            help="POST events there, signed (repeatable).",
            show_default=False,
        ),
    ] = None,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Serve graphs over HTTP (JSON, server-sent events; /openapi.json describes it)."""
    from cgraph.serve.main import serve as run_server
    from cgraph.serve.options import ServeOptions

    options = ServeOptions(
        graphs=tuple(str(g) for g in graphs),
        host=host,
        port=port,
        store=store,
        memory=memory,
        model=model,
        api_base=api_base,
        tokens=str(tokens) if tokens else None,
        workers=workers,
        threads=threads,
        wait=wait,
        lease=lease,
        max_in_flight=max_in_flight,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_connections=max_connections,
        turns_per_minute=turns_per_minute,
        sessions_per_user=sessions_per_user,
        allow_origins=tuple(allow_origin or ()),
        metrics=metrics,
        metrics_token=metrics_token,
        log_format=log_format,
        log_content=log_content,
        trace_content=trace_content,
        webhooks=tuple(webhook or ()),
        trust=trust(allow_module, allow_path),
        limits=read_limits(max_file_size),
    )
    try:
        if studio:
            from cgraph.studio.main import serve_with_studio

            serve_with_studio(options, _say)
        else:
            run_server(options, _say)
    except GraphError as err:
        sys.stderr.write(str(err) + "\n")
        raise typer.Exit(1) from None
    except CgraphError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(1) from None


store_app = typer.Typer(
    name="store",
    help="Look after a session store's tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=PLAIN,
)


@store_app.command(cls=Command)
def migrate(
    store: Annotated[
        str,
        typer.Argument(metavar="STORE", help="A store folder, .sqlite file or postgresql:// URL."),
    ],
) -> None:
    """Create or upgrade the store's tables to this cgraph's layout (servers do it when they
    start; run it before a deploy to do it once)."""
    from cgraph.wiring.stores import migrate_store

    try:
        before, now = migrate_store(store)
    except CgraphError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(1) from None
    said = "already at" if before == now else f"from {before} to" if before else "created at"
    sys.stdout.write(f"session store layout {said} version {now}\n")


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
