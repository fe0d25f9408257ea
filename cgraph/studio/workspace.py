"""The graph files a studio watches: each one linted and served, the files it was read from
stamped so the page can be told when one changes on disk, and reloaded on request — lint
first, and only a graph without errors replaces the one served (a broken edit keeps the
last good graph running and shows its diagnostics).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.draw.focus import Drawing
from cgraph.errors import GraphError
from cgraph.lint.walk import lint_paths
from cgraph.serve.graphs import Served
from cgraph.serve.problems import Problem
from cgraph.serve.service import Service
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import load_graph
from cgraph.spec.trust import Trust
from cgraph.studio.replay import replayed, said

Stamp = tuple[str, int, int, str]
"""(file, mtime in ns, size, sha-256 of its bytes); a missing file is (file, 0, -1, "")."""


@dataclass(frozen=True)
class Studied:
    """One graph file as the studio last read it."""

    file: str
    served: Served | None
    """The last version that linted without errors (None: none yet)."""
    drawing: Drawing | None
    diagnostics: tuple[Diagnostic, ...]
    """What the last lint found (errors and warnings)."""
    stamps: tuple[Stamp, ...]
    version: int
    """Counts the reloads: the page asks for the picture of a version."""

    @property
    def name(self) -> str | None:
        return self.served.graph.name if self.served is not None else None

    @property
    def broken(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def changed(self) -> bool:
        """A file it was read from differs on disk now (its bytes, not just its time)."""
        return any(_stamp(stamp[0], stamp) != stamp for stamp in self.stamps)

    def as_json(self) -> dict[str, Any]:
        graph = self.served.graph if self.served is not None else None
        lint = "errors" if self.broken else "warnings" if self.diagnostics else "clean"
        return {
            "file": self.file,
            "name": self.name,
            "version": self.version,
            "lint": lint,
            "diagnostics": [{**d.as_dict(), "text": d.render()} for d in self.diagnostics],
            "changed": self.changed(),
            "speaks_first": bool(graph and graph.speaks_first),
            "agent": graph.agent.name if graph is not None else None,
        }


def read(
    file: str,
    version: int,
    last: Studied | None = None,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> Studied:
    """`file` linted (its sub-graphs too) and, without errors, loaded, with `trust` and
    `limits` (see `load_graph`); with errors the `last` good version stays the one served."""
    result = lint_paths([Path(file)], trust=trust, limits=limits)
    stamps = tuple(_stamp(f) for f in dict.fromkeys([file, *result.files]))
    diagnostics = list(result.diagnostics)
    if result.missing:
        diagnostics.append(_missing(file))
    kept = (last.served, last.drawing) if last is not None else (None, None)
    if any(d.severity is Severity.ERROR for d in diagnostics):
        return Studied(file, *kept, tuple(diagnostics), stamps, version)
    try:
        graph = load_graph(file, trust=trust, limits=limits)
    except GraphError as err:
        return Studied(file, *kept, (*diagnostics, *err.diagnostics), stamps, version)
    served = Served(graph, file, result.warnings)
    return Studied(file, served, Drawing(graph), tuple(diagnostics), stamps, version)


def _missing(file: str) -> Diagnostic:
    return Diagnostic(
        file,
        1,
        1,
        Severity.ERROR,
        "file-missing",
        "the file is gone or cannot be read",
        "put the graph file back (or start the studio on another one)",
    )


def _stamp(file: str, known: Stamp | None = None) -> Stamp:
    """`file`'s stamp; `known` is returned as is while the file's time and size match it
    (the bytes are read only when they do not)."""
    try:
        status = Path(file).stat()
    except OSError:
        return (file, 0, -1, "")
    if known is not None and known[1:3] == (status.st_mtime_ns, status.st_size):
        return known
    try:
        digest = hashlib.sha256(Path(file).read_bytes()).hexdigest()
    except OSError:
        return (file, 0, -1, "")
    if known is not None and known[3] == digest:  # touched, not changed
        return known
    return (file, status.st_mtime_ns, status.st_size, digest)


class Workspace:
    """The studied files of one studio and the service that serves their graphs."""

    def __init__(self, service: Service, files: Iterable[str]) -> None:
        self.service = service
        self.studied: dict[str, Studied] = {}
        self._lock = threading.Lock()
        for file in dict.fromkeys(files):
            self._take(read(file, 1, None, *self._given()))

    def _given(self) -> tuple[Trust, ReadLimits]:
        """The trust and limits the studio was started with (its server's options)."""
        return self.service.options.trust, self.service.options.limits

    @classmethod
    def of(cls, service: Service) -> Workspace:
        """The files of the graphs `service` serves (`cgraph serve --studio`)."""
        return cls(service, [s.file for s in service.served.values()])

    def _take(self, studied: Studied, replacing: str | None = None) -> None:
        self.studied[studied.file] = studied
        if studied.served is not None:
            self.service.serve_graph(studied.served, replacing)

    def get(self, file: str) -> Studied:
        found = self.studied.get(file)
        if found is None:
            raise Problem(404, "not_found", f"no graph file `{file}` in this studio")
        return found

    def named(self, name: str) -> Studied:
        """The studied file whose served graph is `name`."""
        for studied in self.studied.values():
            if studied.name == name:
                return studied
        raise Problem(404, "not_found", f"no graph `{name}` in this studio")

    def graphs(self) -> dict[str, Any]:
        return {"graphs": [s.as_json() for s in self.studied.values()]}

    def reload(self, user: str, file: str, replay: str | None) -> dict[str, Any]:
        """Lint `file` again; without errors serve the new graph and start a session on it
        (with `replay`, that session's messages sent again and compared turn by turn)."""
        before = said(self.service.opened(user, replay)) if replay else None
        with self._lock:
            last = self.get(file)
            now = read(file, last.version + 1, last, *self._given())
            fresh = now.served is not None and now.served is not last.served
            if fresh:
                self._take(now, last.name)
            else:
                self.studied[file] = now
        answer: dict[str, Any] = {"graph": now.as_json(), "ok": fresh}
        if not fresh or now.name is None:
            return answer
        if before is None:
            created = self.service.create(user, now.name, None)
            return {**answer, "session": created["session"]}
        return {**answer, **replayed(self.service, user, now.name, before)}
