"""The command line (typer and rich are imported here and nowhere else)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush the output and leave without the interpreter's shutdown: nothing is left for it
    to do (`cgraph run`: see its docstring; `cgraph lint`: its final collection and module
    teardown were a twentieth of the command)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


def not_a_graph_file(path: Path) -> str | None:
    """Why `path` cannot be the one graph a command takes, or None when it can be."""
    if path.is_file():
        return None
    if path.is_dir():
        return "is a folder; name one graph file"
    from cgraph.spec.files import Refusal, read_head

    refused = read_head(path, 0)  # a FIFO, a device, a link loop: named, never waited on
    if isinstance(refused, Refusal) and refused.code != "unreadable":
        return refused.message
    return "no such file"


def cannot_write(option: str, path: Path, err: OSError) -> str:
    """Why an output cannot be written, worded as `--store`'s own problems are."""
    reason = err.strerror or str(err)
    if err.filename is not None and Path(err.filename) != path:  # a folder on the way
        reason = f"{err.filename}: {reason}"
    return f"{option} {path}: cannot write it ({reason})"


def started() -> None:
    """The start-up is over (`cgraph run`'s first reply is out): the cyclic collector is
    turned back on, and what the start-up made is left out of its scans (frozen: imports,
    the graph, the model, which live as long as the process), so a collection during a
    later turn scans only that turn's objects."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _is_the_command() -> bool:
    """This process is `cgraph ...` or `python -m cgraph ...`, not a program importing us."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return Path(sys.argv[0]).name == "cgraph" or getattr(spec, "name", "") == "cgraph.__main__"


if _is_the_command():
    # pydantic scans every installed distribution for plugins on first use; the command
    # uses none, and the scan is a large share of `cgraph lint`'s cold start. Set for this
    # process only: a program importing cgraph keeps its own plugins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Start-up (typer, the format's classes, lint's modules) only creates objects that live
    # as long as the process: the cyclic collector scanned them ~a tenth of `cgraph lint`'s
    # start-up for nothing. `app.main` turns it back on for every command but `lint`, which
    # ends as soon as it has read its files (and pauses the collector while reading anyway),
    # and `run`, whose start-up lasts until its first reply (`started`).
    gc.disable()
