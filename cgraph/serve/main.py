"""Starting `cgraph serve`: the checks that refuse a server (the address, the tokens, the
graphs' lint, the store's layout, memory one process keeps), then uvicorn — in this process,
or with `--workers N` in N processes that each build the same app from the options."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable

from cgraph.errors import CgraphError, ConfigError
from cgraph.serve import heap, logs
from cgraph.serve.app import DRAIN_SECONDS, build
from cgraph.serve.deadlines import Deadlines, default_connections, protocol
from cgraph.serve.graphs import load_served
from cgraph.serve.ids import LOCAL_USER
from cgraph.serve.openapi import Endpoint
from cgraph.serve.options import ServeOptions, checked
from cgraph.serve.service import Service

OPTIONS_VARIABLE = "CGRAPH_SERVE_OPTIONS"
MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus-client's folder where the workers of `--workers N` keep their counts."""
"""How the options reach the worker processes."""
Extra = Callable[[Service], tuple[Endpoint, ...]]
"""More endpoints for one process's service (the studio's)."""


def serve(options: ServeOptions, say: Callable[[str], None], extra: Extra | None = None) -> None:
    """Check everything, say what is served, and serve until SIGTERM or Ctrl-C; a refusal
    is a `CgraphError` (a `GraphError` carries the located lint errors) before any port
    is opened. `extra` adds endpoints (one process only)."""
    options = checked(options)
    free(options.host, options.port)
    logs.configure(options.log_format)
    service = Service(options, load_served(options.graphs, options.trust, options.limits))
    for line in banner(options, service):
        say(line)
    if options.workers == 1:
        run(service, extra(service) if extra else ())
        return
    import uvicorn

    settings = uvicorn_settings(options)
    service.store.close()  # each worker opens its own
    os.environ[OPTIONS_VARIABLE] = options.to_json()
    made = None
    if options.metrics and not os.environ.get(MULTIPROCESS):
        # The workers count into one folder, and each scrape sums them.
        made = os.environ[MULTIPROCESS] = tempfile.mkdtemp(prefix="cgraph-metrics-")
    try:
        uvicorn.run(f"{__name__}:worker_app", factory=True, workers=options.workers, **settings)  # type: ignore[arg-type]
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def run(service: Service, extra: tuple[Endpoint, ...] = ()) -> None:
    """Serve `service` in this process until SIGTERM or Ctrl-C."""
    import uvicorn

    settings = uvicorn_settings(service.options)
    app = build(service, service.options.tokens, extra)
    prepared(service)
    free(service.options.host, service.options.port)  # again: preparing took seconds
    heap.settle()
    uvicorn.run(app, **settings)  # type: ignore[arg-type]


def prepared(service: Service) -> None:
    """What each served graph's first session would load, loaded before the process takes
    requests (`Sessions.prepare`: seconds for litellm, the offline chooser's embedding
    model), so that `/readyz` means ready for the first user too; said in the log: how long
    each took, or why its model cannot run here (the server serves the others: a session
    of that graph is refused, or fails, with the reason, as it would have)."""
    for name, served in sorted(service.served.items()):
        began = time.perf_counter()
        try:
            service.opener(name).prepare(served.graph)
        except Exception as err:  # a model entry of the user's may raise anything
            why = err if isinstance(err, CgraphError) else f"could not be prepared: {err!r}"
            then = (
                "its sessions are refused (422 not_servable) until the server starts with "
                "that fixed"
                if isinstance(err, ConfigError)
                else "not prepared: its first session does it"
            )
            logs.LOG.warning("graph `%s` (%s): %s; %s", name, served.file, why, then)
            continue
        seconds = time.perf_counter() - began
        logs.LOG.info("graph `%s` prepared for its first session in %.2f s", name, seconds)


def free(host: str, port: int) -> None:
    """`ConfigError` when another process listens on `port` (checked before anything is
    said or opened, so the refusal is the one line printed)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as err:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {err.strerror or err} (another server on "
                "that port? stop it, or give --port N)"
            ) from err


def uvicorn_settings(options: ServeOptions) -> dict[str, object]:
    logs.configure(options.log_format)
    return {
        "http": protocol(deadlines(options)),
        "log_config": None,  # uvicorn's own lines go through the server's log format
        "host": options.host,
        "port": options.port,
        "log_level": "warning",
        "access_log": False,
        "timeout_graceful_shutdown": int(DRAIN_SECONDS) + 5,
    }


def deadlines(options: ServeOptions) -> Deadlines:
    """The header and body clocks and the connection cap of each server process."""
    cap = options.max_connections or default_connections()
    return Deadlines(options.header_timeout, options.body_timeout, cap)


def worker_app() -> object:
    """The app of one worker process (`--workers N`), from the options in the environment."""
    options = ServeOptions.from_json(os.environ[OPTIONS_VARIABLE])
    logs.configure(options.log_format)
    service = Service(options)
    app = build(service, options.tokens)
    prepared(service)
    heap.settle()
    return app


def banner(options: ServeOptions, service: Service) -> list[str]:
    names = ", ".join(sorted(service.served))
    memory = options.memory or "embedded Chroma"
    where = f"http://{options.host}:{options.port}"
    clocks = deadlines(options)
    lines = [
        f"cgraph serve: {len(service.served)} graph(s) ({names}) on {where}",
        f"sessions: {_store_name(options.store)} · memory: {memory} · workers: {options.workers}",
        f"connections: at most {clocks.max_connections} a process · headers within "
        f"{clocks.header_seconds:g} s · bodies within {clocks.body_seconds:g} s",
    ]
    if options.tokens is None:
        lines.append(
            f"no --tokens: one user `{LOCAL_USER}`, reachable from this machine only "
            f"({options.host}); give --tokens FILE to serve others"
        )
    lines.append(f"try: curl -s {where}/v1/graphs   (API: {where}/openapi.json)")
    return lines


def _store_name(store: str) -> str:
    """The store without a URL's password."""
    head, at, tail = store.rpartition("@")
    if not at or "://" not in head:
        return store
    scheme, _, credentials = head.partition("://")
    return f"{scheme}://{credentials.partition(':')[0]}@{tail}"
