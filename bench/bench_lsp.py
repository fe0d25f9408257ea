"""How soon after a keystroke does `cgraph lsp` show the diagnostics of a big graph?

    python bench/bench_lsp.py [--states 1000] [--changes 20]

A generated graph of 1,000 states (~0.55 MB, `tests/support/generated_graph.py`) is opened
in a real `cgraph lsp` process by pygls' own client over stdio. Each change is one
keystroke sent as editors send it (an incremental change): alternately a letter typed
after a `next_state` (`s2x`, an unknown state) and deleted again, so every change
publishes different diagnostics; the time from sending the change to receiving its
diagnostics is measured (the server's debounce is set to 0 with `initializationOptions`,
and then to its default, 50 ms). The anchor, measured in the same run and the same way
interleaved: `lint_paths` of the same file in this process, read whole, which is what a
change asked of the server before it kept its reads and its states' results
(`cgraph.spec.reread`, `cgraph.spec.kept`): now a change reads and checks again only the
state it touched, and runs the whole-graph checks (reachability, references) on the model;
a ratio under 1 is that saving. A third row times that in-process too (`lint_paths` with
a `Kept`). Aim: within 300 ms of a change at the default debounce.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cgraph.lint.walk import lint_paths  # noqa: E402
from cgraph.spec.kept import Kept  # noqa: E402
from tests.support.generated_graph import write  # noqa: E402


async def session(path: Path, changes: int, debounce: float | None) -> list[float]:
    """Seconds from each change to its diagnostics, in one server."""
    client = LanguageClient("bench", "1")
    arrived: asyncio.Queue[tuple[float, int]] = asyncio.Queue()

    @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: t.PublishDiagnosticsParams) -> None:
        arrived.put_nowait((time.perf_counter(), len(params.diagnostics)))

    await client.start_io(sys.executable, "-m", "cgraph", "lsp")
    options = {} if debounce is None else {"debounce": debounce}
    await client.initialize_async(
        t.InitializeParams(
            capabilities=t.ClientCapabilities(),
            root_uri=path.parent.as_uri(),
            initialization_options=options,
        )
    )
    client.initialized(t.InitializedParams())
    uri = path.as_uri()
    clean = path.read_text(encoding="utf-8")
    end = clean.index("next_state: s2\n") + len("next_state: s2")
    at = t.Position(clean.count("\n", 0, end), end - clean.rfind("\n", 0, end) - 1)
    after = t.Position(at.line, at.character + 1)
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(t.TextDocumentItem(uri, "yaml", 1, clean))
    )
    await arrived.get()
    took = []
    for number in range(changes):
        typed = number % 2 == 0
        where = t.Range(at, at) if typed else t.Range(at, after)
        change = t.TextDocumentContentChangePartial(where, "x" if typed else "")
        identifier = t.VersionedTextDocumentIdentifier(uri=uri, version=number + 2)
        sent = time.perf_counter()
        client.text_document_did_change(t.DidChangeTextDocumentParams(identifier, [change]))
        received, count = await arrived.get()
        assert count == (1 if typed else 0), count
        took.append(received - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return took


def anchor(path: Path, runs: int) -> list[float]:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        lint_paths([path])
        took.append(time.perf_counter() - start)
    return took


def kept(path: Path, runs: int) -> list[float]:
    """`lint_paths` of the buffer after each keystroke, reads and states' results kept as
    the server keeps them."""
    reads, key, clean = Kept(), path.resolve(), path.read_text(encoding="utf-8")
    at = clean.index("next_state: s2\n") + len("next_state: s2")
    lint_paths([path], texts={key: clean}, kept=reads)
    took = []
    for number in range(runs):
        text = clean[:at] + "x" + clean[at:] if number % 2 == 0 else clean
        start = time.perf_counter()
        lint_paths([path], texts={key: text}, kept=reads)
        took.append(time.perf_counter() - start)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write(args.states, Path(tmp))
        size = path.stat().st_size / 1e6
        lint_paths([path])  # warm: imports and the compiled schema
        lints, rereads, at_zero, at_default = [], [], [], []
        for _ in range(2):  # interleaved, so a busy machine slows each alike
            lints += anchor(path, args.changes // 2)
            rereads += kept(path, args.changes // 2)
            at_zero += asyncio.run(session(path, args.changes // 2, 0.0))
            at_default += asyncio.run(session(path, args.changes // 2, None))
    base = statistics.median(lints)
    print(f"cgraph lsp: a {args.states:,}-state graph ({size:.2f} MB), {args.changes} changes each")
    print()
    print("| from a change to its diagnostics | median | max | / lint_paths |")
    print("| --- | ---: | ---: | ---: |")
    worst = max(lints) * 1000
    print(f"| `lint_paths`, read whole (anchor) | {base * 1000:.0f} ms | {worst:.0f} ms | 1.00 |")
    rows = (
        ("`lint_paths`, reads kept (what a change costs now)", rereads),
        ("`cgraph lsp`, debounce 0", at_zero),
        ("`cgraph lsp`, default debounce (50 ms)", at_default),
    )
    for name, took in rows:
        median = statistics.median(took)
        print(
            f"| {name} | {median * 1000:.0f} ms | {max(took) * 1000:.0f} ms | {median / base:.2f} |"
        )
    verdict = "within" if statistics.median(at_default) <= 0.3 else "OVER"
    print()
    print(f"Default debounce: median {verdict} the 300 ms aim.")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    with recorded("lsp"):
        main()
