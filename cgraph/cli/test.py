"""`cgraph test`: run conversation tests, report them, and map the result to an exit code."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cgraph.cli.usage import choices


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
) -> None:
    """Run conversation tests; exit 1 on a failure or low coverage, 2 on a file error."""
    from cgraph.testing.suite import TestRequest, run_tests

    request = TestRequest(
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
        code = run_tests(request, sys.stdout, sys.stderr)
    except OSError as err:  # --html or --record
        sys.stderr.write(f"error: cannot write {err.filename}: {err.strerror or err}\n")
        raise typer.Exit(2) from err
    sys.stderr.write(say_hints(request.paths, model))
    raise typer.Exit(code)


def say_hints(paths: tuple[Path, ...], model: str | None) -> str:
    """The offline hints (`no-say`, `offline-slot`) of the graphs tested offline, once per
    run however many files test them (the same lines `cgraph run` prints offline)."""
    from cgraph.cli.opening import offline_hints
    from cgraph.lint.offline import OFFLINE_CHECKS, OFFLINE_CODES
    from cgraph.lint.walk import lint_paths

    graphs = offline_graphs(paths, model)
    found = lint_paths(graphs, checks=OFFLINE_CHECKS).diagnostics if graphs else []
    return offline_hints([d for d in found if d.code in OFFLINE_CODES])


def offline_graphs(paths: tuple[Path, ...], model: str | None) -> list[Path]:
    """The graphs the test files under `paths` run in the semantic mode, each once."""
    from cgraph.errors import CgraphError
    from cgraph.spec.testfile import Scripted
    from cgraph.testing.cases import find_files, load

    found: dict[Path, Path] = {}
    for path in find_files(paths):
        try:
            tests, _ = load(path)
        except CgraphError:
            continue  # reported by the run itself
        scripted = tests is not None and isinstance(tests.model, Scripted)
        if tests is not None and (model or ("" if scripted else str(tests.model))) == "semantic":
            found.setdefault(tests.graph_path.resolve(), tests.graph_path)
    return list(found.values())
