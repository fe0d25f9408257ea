"""`cgraph test`: run conversation tests, report them, and map the result to an exit code."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cgraph.cli.shown import shown
from cgraph.cli.usage import AllowModule, AllowPath, MaxFileSize, choices, read_limits, trust


class TestFormat(StrEnum):
    """Output formats of `cgraph test` (the names of `cgraph.testing.reporters.REPORTERS`)."""

    text = "text"
    json = "json"
    junit = "junit"
    github = "github"


TestFormat.__test__ = False  # type: ignore[attr-defined]  # not a pytest class


def test(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Test files and folders (searched for *.test.yaml). Default: the current folder.",
            show_default=False,
            metavar="PATH",
        ),
    ] = None,
    pattern: Annotated[
        list[str] | None,
        typer.Option(
            "-k",
            metavar="PATTERN",
            help="Only cases whose name contains this (or globs); repeatable.",
        ),
    ] = None,
    exitfirst: Annotated[bool, typer.Option("-x", help="Stop at the first failure.")] = False,
    model: Annotated[
        str | None, typer.Option(metavar="NAME", help="Override every file's model.")
    ] = None,
    output: Annotated[
        TestFormat,
        typer.Option("--format", "-f", metavar=choices(TestFormat), help="Output format."),
    ] = TestFormat.text,
    coverage: Annotated[
        bool,
        typer.Option(
            "--coverage",
            help="Report the states entered and the exits and on_error/on_limit routes taken.",
        ),
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(
            metavar="PERCENT", help="Fail when a graph's exit coverage is below this percent."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Write a self-contained HTML report to this file."),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Save each file's model exchanges to DIR/<name>.jsonl for replay."
        ),
    ] = None,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Run conversation tests; exit 1 on a failure or low coverage, 2 on a file error."""
    from cgraph.testing.suite import TestRequest, run_tests

    request = TestRequest(
        trust=trust(allow_module, allow_path),
        limits=read_limits(max_file_size),
        paths=tuple(paths or [Path()]),
        patterns=tuple(pattern or ()),
        stop_first=exitfirst,
        model=model,
        output=output.value,
        coverage=coverage or fail_under is not None,
        fail_under=fail_under,
        html=html,
        record=record,
    )
    try:
        out = shown(sys.stdout, json=output.value == "json")
        code = run_tests(request, out, shown(sys.stderr))
    except OSError as err:  # --html or --record
        sys.stderr.write(f"error: cannot write {err.filename}: {err.strerror or err}\n")
        raise typer.Exit(2) from err
    raise typer.Exit(code)
