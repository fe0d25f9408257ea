"""What a graph file may reach: one rule for lint, the loader and the runtime.

A graph is data, written by someone who may not be trusted with the machine. It may
name tool handlers and other graph files, and nothing else:

- a tool handler is a Python file inside the graph's folder (`tools/x.py` for
  `tools.x:fn`, also after its links are followed), or a module the person running
  cgraph allowed (`--allow-module NAME`, `CGRAPH_ALLOW_MODULES`): `os:system` is neither;
- a graph file a `graph` state or a `file#state` target names stays inside the root
  graph's folder tree, links followed (`../outside.yaml`, `/etc/shadow` do not), unless
  it is inside a folder the person running cgraph allowed (`--allow-path DIR`,
  `CGRAPH_ALLOW_PATHS`).

What the person running cgraph allows is a `Trust` value, handed to whatever reads a
graph (`load_graph`, lint), runs its tools (the tool runner, and in its requests to a tool
worker process) or serves it (`cgraph serve`'s options). The library allows nothing
extra unless given one; only the command line reads the environment variables, once,
into the value it passes on. A graph cannot allow anything itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALLOW_MODULES_VARIABLE = "CGRAPH_ALLOW_MODULES"
"""Modules (and their submodules) tool handlers may come from, separated by commas; read
by the command line only."""
ALLOW_PATHS_VARIABLE = "CGRAPH_ALLOW_PATHS"
"""Folders graph files may be read from besides the root graph's, separated by
`os.pathsep`; read by the command line only."""
_SEPARATORS = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Trust:
    """What a graph may reach besides its own folder: `Trust()` allows nothing more."""

    modules: tuple[str, ...] = ()
    """Installed modules (and their submodules) tool handlers may come from."""
    paths: tuple[Path, ...] = ()
    """Folders graph files may be read from besides the root graph's (links followed)."""

    def allows_module(self, module: str) -> bool:
        """Whether `module` is an allowed module or inside an allowed package."""
        return any(module == name or module.startswith(name + ".") for name in self.modules)

    def also(self, modules: Iterable[str] = (), paths: Iterable[Path] = ()) -> Trust:
        """This trust with more modules and folders allowed (each once, in order)."""
        more = (*self.paths, *(real(path) for path in paths))
        return Trust(tuple(dict.fromkeys((*self.modules, *modules))), tuple(dict.fromkeys(more)))

    def as_data(self) -> dict[str, list[str]]:
        """As JSON data, for a process this one starts (`trust_of` reads it back)."""
        return {"modules": list(self.modules), "paths": [str(path) for path in self.paths]}


def trust_of(data: Mapping[str, Any]) -> Trust:
    """The trust `Trust.as_data` wrote."""
    return Trust(tuple(data.get("modules", ())), tuple(map(Path, data.get("paths", ()))))


def trust_from(modules_text: str = "", paths_text: str = "") -> Trust:
    """The trust the text of `CGRAPH_ALLOW_MODULES` (names separated by commas or spaces)
    and of `CGRAPH_ALLOW_PATHS` (folders separated by `os.pathsep`) allow."""
    modules = (name for name in _SEPARATORS.split(modules_text) if name)
    return Trust().also(modules, (Path(part) for part in paths_text.split(os.pathsep) if part))


def real(path: Path) -> Path:
    """`path` absolute with its links followed (a link that loops is left as it is)."""
    return Path(os.path.realpath(path))


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or below it, both with their links followed."""
    return real(path).is_relative_to(real(folder))


def graph_file_problem(target: Path, root: Path, trust: Trust) -> str | None:
    """Why a graph file may not be read from `target` when the root graph's folder is
    `root` and `trust` allows its folders too, in words to follow the path; None when it
    may."""
    if inside(target, root) or any(inside(target, folder) for folder in trust.paths):
        return None
    return f"leaves the root graph's folder {real(root)}"


GRAPH_FILE_HINT = (
    "keep the graphs a graph hands over to in its folder or below it; to read them from "
    "another folder, run with --allow-path DIR (or CGRAPH_ALLOW_PATHS)"
)
HANDLER_HINT = (
    "put the handler in a Python file in the graph's folder (`tools/x.py` for `tools.x:fn`); "
    "a module installed elsewhere runs only when you allow it: --allow-module NAME (or "
    "CGRAPH_ALLOW_MODULES)"
)
