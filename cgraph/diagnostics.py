"""Diagnostics are data: frozen, located records collected per file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

DataPath = tuple[str | int, ...]
"""Keys and indexes from a document's root to one value: `("states", "ask", "actions", 0)`."""


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Fix:
    """The edit a diagnostic proposes: the word `old`, in the node it points at, becomes
    `new` ("did you mean `check_meds`?" as data, for an editor's quick fix)."""

    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in one file, pointing at the YAML node that causes it."""

    file: str
    line: int
    column: int
    severity: Severity
    code: str
    message: str
    hint: str = ""
    path: DataPath = field(default=())
    fix: Fix | None = None

    def render(self) -> str:
        """`file:line:col severity code message`, then the hint on its own line."""
        where = f"{self.file}:{self.line}:{self.column}"
        head = f"{where} {self.severity.value} {self.code} {self.message}"
        return f"{head}\n  hint: {self.hint}" if self.hint else head

    def as_dict(self) -> dict[str, object]:
        """The diagnostic as JSON-able data, `path` included."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "path": list(self.path),
        }


def has_errors(diagnostics: list[Diagnostic] | tuple[Diagnostic, ...]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)


def shown_path(path: Path) -> Path:
    """`path` as messages show it: normalised (`tests/../g.yaml` is `g.yaml`), and relative
    to the working folder when it is under it."""
    normal = Path(os.path.normpath(path))
    try:
        return normal.absolute().relative_to(Path.cwd())
    except ValueError:
        return normal
