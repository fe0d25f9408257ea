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

The allow-lists come from the environment, where the command line puts its options: so
they reach a tool worker process too. A graph cannot allow anything itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ALLOW_MODULES_VARIABLE = "CGRAPH_ALLOW_MODULES"
"""Modules (and their submodules) tool handlers may come from, separated by commas."""
ALLOW_PATHS_VARIABLE = "CGRAPH_ALLOW_PATHS"
"""Folders graph files may be read from besides the root graph's, separated by `os.pathsep`."""
_SEPARATORS = re.compile(r"[\s,]+")


def allowed_modules() -> frozenset[str]:
    """The modules the environment allows handlers from."""
    text = os.environ.get(ALLOW_MODULES_VARIABLE, "")
    return frozenset(name for name in _SEPARATORS.split(text) if name)


def allowed_paths() -> tuple[Path, ...]:
    """The folders the environment allows graph files from (links followed)."""
    text = os.environ.get(ALLOW_PATHS_VARIABLE, "")
    return tuple(real(Path(part)) for part in text.split(os.pathsep) if part)


def allow(modules: tuple[str, ...] = (), paths: tuple[Path, ...] = ()) -> None:
    """Add to the allow-lists of this process and of the processes it starts."""
    if modules:
        known = sorted(allowed_modules() | set(modules))
        os.environ[ALLOW_MODULES_VARIABLE] = ",".join(known)
    if paths:
        known_paths = [*map(str, allowed_paths()), *(str(real(p)) for p in paths)]
        os.environ[ALLOW_PATHS_VARIABLE] = os.pathsep.join(dict.fromkeys(known_paths))


def module_allowed(module: str) -> bool:
    """Whether `module` is an allowed module or inside an allowed package."""
    return any(module == name or module.startswith(name + ".") for name in allowed_modules())


def real(path: Path) -> Path:
    """`path` absolute with its links followed (a link that loops is left as it is)."""
    return Path(os.path.realpath(path))


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or below it, both with their links followed."""
    return real(path).is_relative_to(real(folder))


def graph_file_problem(target: Path, root: Path) -> str | None:
    """Why a graph file may not be read from `target` when the root graph's folder is
    `root`, in words to follow the path; None when it may."""
    if inside(target, root) or any(inside(target, folder) for folder in allowed_paths()):
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
