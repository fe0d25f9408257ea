"""Where a tool handler's module is found next to its graph: one rule for lint and runtime.

A handler `pkg.mod:function` is looked up first as a file under the graph's folder
(`pkg/mod.py`, then `pkg/mod/__init__.py`), then on the Python path, where only an
allowed module may come from (`cgraph.spec.trust`). A file is under the folder only if
it still is once its links are followed. Lint reads the file it finds without importing
it; the runtime imports it.
"""

from __future__ import annotations

from pathlib import Path

from cgraph.spec.trust import inside


def local_module(module: str, folder: Path) -> Path | None:
    """The file of `module` under `folder`, or None when the folder has none."""
    relative = Path(*module.split("."))
    for candidate in (folder / relative.with_suffix(".py"), folder / relative / "__init__.py"):
        if candidate.is_file() and inside(candidate, folder):
            return candidate
    return None
