"""`cgraph run`: open a session on a graph and talk with it, interactively or from stdin.

The run ends with `os._exit` once its output is flushed (`cgraph.cli.exit_now`): nothing
is left for the interpreter's shutdown to do, so an error exits as soon as it is printed.
Shutdown could deadlock: while the main thread finalizes modules, litellm's
`AsyncHTTPHandler.__del__` imports a module, which waits for the import lock held by a
daemon thread still importing chromadb or the embedding model; daemon threads are frozen
during finalization, so the lock is never released (a probe hung for over 10 minutes).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cgraph.cli.opening import (
    SEMANTIC,
    RunOptions,
    load_checked,
    open_session,
    warm_up_early,
)
from cgraph.cli.shown import printable_lines
from cgraph.errors import CgraphError, GraphError

if TYPE_CHECKING:
    from cgraph.session import Session


def run_command(options: RunOptions, *, jsonl: bool) -> int:
    """The `run` command; returns the exit code."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        warm = partial(warm_up_early, options=options)
        spec, hints = load_checked(options.graph, warm, options.trust, options.limits)
    except GraphError as err:
        sys.stderr.write("".join(line + "\n" for line in printable_lines(str(err))))
        return 1
    try:
        opened = open_session(spec, options)
    except CgraphError as err:
        sys.stderr.write("".join(line + "\n" for line in printable_lines(f"error: {err.message}")))
        return 1
    if opened.model_name == SEMANTIC:
        from cgraph.lint.gate import offline_hints

        sys.stderr.write(offline_hints(hints))
    # A byte that is not UTF-8 is read as a stand-in character the line check refuses,
    # instead of a decoding error that would end the run.
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="surrogateescape")
    try:
        with traced(options.trace, opened.session):
            if sys.stdin.isatty() and not jsonl:
                from cgraph.cli.repl import Repl

                return Repl(opened).loop()
            from cgraph.cli.lines import run_lines

            return run_lines(opened, sys.stdin, own_stdout(), sys.stderr, jsonl=jsonl)
    except CgraphError as err:  # the trace file cannot be written
        sys.stderr.write(f"error: {err.message}\n")
        return 1
    finally:
        # What is still being remembered is taken in; the tool workers stop.
        with contextlib.suppress(CgraphError):
            opened.session.close()


@contextlib.contextmanager
def traced(path: Path | None, session: Session) -> Iterator[None]:
    """With `--trace FILE`: the model calls of the run watched, and when it ends the spans
    of its turns appended to FILE, as `cgraph serve` exports them."""
    if path is None:
        yield
        return
    from cgraph.observe import ModelCall, watching
    from cgraph.serve.tracing import to_file

    tracing = to_file(path, content=True)
    calls: list[ModelCall] = []
    after = -1 if session.opening is not None else session.view.turn_number
    try:
        with watching(calls.append):
            yield
    finally:
        tracing.session_spans(session, after, calls)
        tracing.close()


def own_stdout() -> TextIO:
    """The run's own copy of stdout, for its replies; file descriptor 1 and `sys.stdout`
    then lead to stderr, so what anything else in this process prints (an `isolation:
    thread` tool handler, a library) never lands between the replies' lines."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding=sys.stdout.encoding, errors=sys.stdout.errors)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out
