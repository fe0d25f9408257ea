"""Lint's diagnostics as the protocol's: the whole word or value at `line:col`, the code
linked to its rule, the hint beside the message, the fix as data for a quick fix."""

from __future__ import annotations

import re

from lsprotocol import types as t

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.lsp.hover import rule_url

_TOKEN = re.compile(r"[^\s,\[\]{}]+")
SOURCE = "cgraph"


def to_lsp(diagnostic: Diagnostic, text: str) -> t.Diagnostic:
    line, column = max(diagnostic.line - 1, 0), max(diagnostic.column - 1, 0)
    lines = text.split("\n")
    current = lines[line] if line < len(lines) else ""
    token = _TOKEN.match(current, column)
    end = token.end() if token else len(current)
    if end <= column:
        end = column + 1
    if current[column:end].endswith(":"):
        end -= 1  # a key: the name, not its colon
    message = diagnostic.message + (f"\nhint: {diagnostic.hint}" if diagnostic.hint else "")
    fix = diagnostic.fix
    return t.Diagnostic(
        t.Range(t.Position(line, column), t.Position(line, max(end, column))),
        message,
        severity=(
            t.DiagnosticSeverity.Error
            if diagnostic.severity is Severity.ERROR
            else t.DiagnosticSeverity.Warning
        ),
        code=diagnostic.code,
        code_description=t.CodeDescription(rule_url(diagnostic.code)),
        source=SOURCE,
        data={"old": fix.old, "new": fix.new} if fix else None,
    )
