"""Starting the studio: `cgraph studio GRAPH` (one graph file, on this machine only, offline
by default like `cgraph run`; a graph with errors still opens, the page shows them) and
`cgraph serve --studio` (the page beside the API of the graphs served)."""

from __future__ import annotations

from collections.abc import Callable

from cgraph.errors import ConfigError
from cgraph.serve.main import free, run, serve
from cgraph.serve.options import ServeOptions, checked
from cgraph.serve.service import Service
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust
from cgraph.studio.routes import endpoints, new_secret
from cgraph.studio.workspace import Workspace

PATH = "/studio"
UNLIMITED = 1_000_000
"""A designer's own turns and sessions are not rationed."""


def options_for(
    graph: str,
    *,
    model: str | None,
    port: int,
    store: str,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> ServeOptions:
    """What `cgraph studio` serves: one graph, one designer, on 127.0.0.1, with `trust`
    and `limits` (see `load_graph`)."""
    return ServeOptions(
        graphs=(graph,),
        port=port,
        store=store,
        model=model,
        trust=trust or Trust(),
        limits=limits or ReadLimits(),
        turns_per_minute=UNLIMITED,
        sessions_per_user=UNLIMITED,
        threads=4,
    )


def address(options: ServeOptions, secret: str) -> str:
    """The page's address with this launch's secret (the first visit makes it a cookie)."""
    return f"http://{options.host}:{options.port}{PATH}?secret={secret}"


def studio(options: ServeOptions, say: Callable[[str], None], secret: str) -> None:
    """Serve the page on `options.graphs` until Ctrl-C (a `CgraphError` before start),
    to visitors who come through `address(options, secret)`."""
    free(options.host, options.port)
    service = Service(checked(options), served={})
    workspace = Workspace(service, options.graphs)
    for line in banner(options, workspace, secret):
        say(line)
    run(service, endpoints(workspace, secret))


def serve_with_studio(options: ServeOptions, say: Callable[[str], None]) -> None:
    """`cgraph serve --studio`: the page is one designer's, on this machine."""
    if options.tokens is not None or options.workers > 1:
        raise ConfigError(
            "--studio is a page for one designer on this machine: serve it without "
            "--tokens and --workers (on 127.0.0.1), or drop --studio"
        )
    free(options.host, options.port)
    secret = new_secret()
    say(f"studio: {address(options, secret)}")
    serve(options, say, lambda service: endpoints(Workspace.of(service), secret))


def banner(options: ServeOptions, workspace: Workspace, secret: str) -> list[str]:
    lines = []
    for studied in workspace.studied.values():
        if studied.served is not None:
            lines.append(f"graph {studied.name} ({studied.file})")
        else:
            errors = sum(1 for d in studied.diagnostics if d.severity == "error")
            lines.append(f"{studied.file}: {errors} error(s) — the page shows them; fix and reload")
    model = options.model or "the graph's model, else the offline semantic mode (no key)"
    lines += [
        f"model: {model} · sessions: {options.store}",
        f"cgraph studio on {address(options, secret)}",
    ]
    return lines
