"""A bench's results as a data file the docs include, with the date and the machine.

    if __name__ == "__main__":
        from record import recorded

        with recorded("lint"):
            main()

Everything the bench prints still goes to the terminal, and is also written to
`docs/data/bench_<name>.md` as it was printed, followed by a line saying when, on what
machine (processor, cores, memory, load, Python) and by which command it was measured.
The Performance page of the docs includes these files, so its figures are always the
last ones a bench printed. A bench that fails writes nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import shlex
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data"


class _Tee(io.TextIOBase):
    """Writes to the terminal and keeps a copy."""

    def __init__(self, terminal: TextIO) -> None:
        self.terminal = terminal
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.terminal.write(text)
        return self.kept.write(text)

    def flush(self) -> None:
        self.terminal.flush()


@contextlib.contextmanager
def recorded(name: str) -> Iterator[None]:
    """Run the bench, then write what it printed to `docs/data/bench_<name>.md`."""
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    write(name, tee.kept.getvalue())


def write(name: str, printed: str) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"bench_{name}.md"
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    command = shlex.join(["python", str(shown), *sys.argv[1:]])
    text = (
        f"<!-- Written by {shown}: run it again to rewrite this file. -->\n\n"
        f"{as_markdown(printed)}\n\n"
        f"*Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}, "
        f"by `{command}`.*\n"
    )
    path.write_text(text, encoding="utf-8")
    return path


def as_markdown(printed: str) -> str:
    """What a bench printed, for the docs: its Markdown tables (runs of lines that start
    with `|`) as tables, everything else as it was printed, in text blocks."""
    parts: list[str] = []
    run: list[str] = []
    table = False
    for line in [*printed.rstrip().split("\n"), None]:
        is_row = line is not None and line.lstrip().startswith("|")
        if line is None or is_row != table:
            text = "\n".join(run).strip("\n")
            if text.strip():
                parts.append(text.strip() if table else f"```text\n{text}\n```")
            run, table = [], is_row
        if line is not None:
            run.append(line)
    return "\n\n".join(parts)


def machine() -> str:
    """`AMD EPYC 7B13, 2 cores, 24 GB, load 1.3, Linux x86_64, Python 3.11.2`."""
    parts = [_processor(), f"{os.cpu_count()} cores"]
    memory = _memory_gb()
    if memory:
        parts.append(f"{memory:.0f} GB")
    with contextlib.suppress(OSError):
        parts.append(f"load {os.getloadavg()[0]:.1f}")
    parts.append(f"{platform.system()} {platform.machine()}")
    parts.append(f"Python {platform.python_version()}")
    return ", ".join(p for p in parts if p)


def _processor() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    return platform.processor()


def _memory_gb() -> float:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0
