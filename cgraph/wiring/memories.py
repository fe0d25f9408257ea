"""Where a served graph's memories are kept, by name: `off`, a Chroma server, or the
graph's own (`MEMORIES`; an unknown name lists the valid ones)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cgraph.errors import ConfigError
from cgraph.runtime.ports import MemoryStore, NullMemory
from cgraph.spec.model import Graph

MEMORY_OFF = "off"
CHROMA_SCHEME = "chroma://"
VALID = "`off` or chroma://HOST:PORT (a Chroma server)"


def _chroma(graph: Graph, where: str | None, folder: Path | None) -> MemoryStore:
    """The graph's Chroma: the server `where` names unless the graph names its own, else
    the graph's own server, else an embedded Chroma in `folder/memory` (one process's)."""
    from cgraph.backends.memory.chroma import open_memory

    config = graph.memory
    if where is not None and not config.host:
        host, port = chroma_address(where)
        config = replace(config, host=host, port=port)
    return open_memory(config, folder)


MEMORIES: dict[str, Callable[[Graph, str | None, Path | None], MemoryStore]] = {
    MEMORY_OFF: lambda graph, where, folder: NullMemory(),
    "chroma": _chroma,
}
"""Each kind of memory and how it is opened for a graph."""


def memory_kind(where: str | None) -> str:
    """The `MEMORIES` entry `where` names (None: the graph's own Chroma)."""
    if where == MEMORY_OFF:
        return MEMORY_OFF
    if where is None or where.startswith(CHROMA_SCHEME):
        return "chroma"
    raise ConfigError(f"--memory {where}: expected {VALID}")


def open_memory_store(graph: Graph, where: str | None, folder: Path | None) -> MemoryStore:
    """The memories a served graph keeps (`MEMORIES`): none (`off`), a Chroma server
    (`chroma://host:port`, unless the graph names a server of its own), else the graph's
    own server, else an embedded Chroma in `folder/memory` (one process's)."""
    return MEMORIES[memory_kind(where)](graph, where, folder)


def chroma_address(where: str) -> tuple[str, int]:
    """(host, port) of `chroma://host:port`; `ConfigError` for anything else."""
    host, _, port = where.removeprefix(CHROMA_SCHEME).rstrip("/").rpartition(":")
    if not where.startswith(CHROMA_SCHEME) or not host or not port.isdigit():
        raise ConfigError(f"--memory {where}: expected {VALID}")
    return host, int(port)
