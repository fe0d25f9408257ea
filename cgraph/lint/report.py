"""Reporters: one small ABC, a name → class table, one class per output format."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import IO, TYPE_CHECKING, Any

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.lint.codes import CODES

if TYPE_CHECKING:
    from cgraph.lint.walk import LintResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


class Reporter(ABC):
    """Writes a lint result to `out`; notes (skipped files) go to `err`."""

    def __init__(self, out: IO[str], err: IO[str], *, strict: bool = False) -> None:
        self.out = out
        self.err = err
        self.strict = strict

    def report(self, result: LintResult) -> None:
        for note in result.notes:
            self.err.write(f"note: {note}\n")
        for path in result.missing:
            self.err.write(f"error: {path}: no such file or folder, or not readable\n")
        self.write(result)

    @abstractmethod
    def write(self, result: LintResult) -> None:
        """Write the diagnostics in this reporter's format."""


class TextReporter(Reporter):
    """`file:line:col severity code message`, an indented hint, and a summary line."""

    def write(self, result: LintResult) -> None:
        for diag in result.diagnostics:
            self.out.write(diag.render() + "\n")
        files = len(result.files)
        summary = (
            f"{_count(result.errors, 'error')}, {_count(result.warnings, 'warning')} "
            f"in {_count(files, 'file')}"
        )
        if self.strict and result.warnings:
            summary += " (--strict: warnings fail)"
        self.out.write(summary + "\n")


def _count(number: int, word: str) -> str:
    return f"{number} {word}" + ("" if number == 1 else "s")


class JsonReporter(Reporter):
    """A JSON list of objects: file, line, column, severity, code, message, hint."""

    def write(self, result: LintResult) -> None:
        items = [_plain(d) for d in result.diagnostics]
        self.out.write(json.dumps(items, indent=2, ensure_ascii=False) + "\n")


def _plain(diag: Diagnostic) -> dict[str, Any]:
    # README promises exactly these seven keys: `path` is for the library, not the report.
    return {k: v for k, v in diag.as_dict().items() if k != "path"}


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: annotations on the pull request's diff."""

    def write(self, result: LintResult) -> None:
        for diag in result.diagnostics:
            level = "error" if diag.severity is Severity.ERROR else "warning"
            props = ",".join(
                f"{k}={_escape_property(str(v))}"
                for k, v in (
                    ("file", diag.file),
                    ("line", diag.line),
                    ("col", diag.column),
                    ("title", f"cgraph {diag.code}"),
                )
            )
            text = diag.message + (f"\nhint: {diag.hint}" if diag.hint else "")
            self.out.write(f"::{level} {props}::{_escape_data(text)}\n")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class SarifReporter(Reporter):
    """SARIF 2.1.0 for code scanning; one rule per diagnostic code."""

    def write(self, result: LintResult) -> None:
        from cgraph.version import __version__

        codes = sorted({d.code for d in result.diagnostics})
        rules = [_rule(code) for code in codes]
        index = {code: i for i, code in enumerate(codes)}
        log = {
            "$schema": SARIF_SCHEMA,
            "version": "2.1.0",
            "runs": [
                {
                    "tool": {
                        "driver": {
                            "name": "cgraph",
                            "version": __version__,
                            "rules": rules,
                        }
                    },
                    "results": [_result(d, index[d.code]) for d in result.diagnostics],
                    "columnKind": "unicodeCodePoints",
                }
            ],
        }
        self.out.write(json.dumps(log, indent=2, ensure_ascii=False) + "\n")


def _rule(code: str) -> dict[str, Any]:
    description = CODES.get(code, code)
    return {
        "id": code,
        "name": "".join(part.title() for part in code.split("-")),
        "shortDescription": {"text": description},
        "help": {"text": f"See `{code}` under the lint checks in cgraph's README."},
    }


def _result(diag: Diagnostic, rule_index: int) -> dict[str, Any]:
    text = diag.message + (f" (hint: {diag.hint})" if diag.hint else "")
    return {
        "ruleId": diag.code,
        "ruleIndex": rule_index,
        "level": "error" if diag.severity is Severity.ERROR else "warning",
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(diag.file)},
                    "region": {"startLine": diag.line, "startColumn": diag.column},
                }
            }
        ],
    }


def _uri(file: str) -> str:
    from urllib.parse import quote

    return quote(file.replace("\\", "/"))


REPORTERS: dict[str, type[Reporter]] = {
    "text": TextReporter,
    "json": JsonReporter,
    "github": GithubReporter,
    "sarif": SarifReporter,
}


def reporter(name: str, out: IO[str], err: IO[str], *, strict: bool = False) -> Reporter:
    """The reporter called `name`; an unknown name lists the valid ones."""
    from cgraph.errors import ConfigError

    try:
        return REPORTERS[name](out, err, strict=strict)
    except KeyError:
        raise ConfigError(f"unknown format `{name}`; formats are {', '.join(REPORTERS)}") from None
