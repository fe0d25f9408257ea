"""One `cgraph test` invocation as a library call: run, report, judge coverage, exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from cgraph.diagnostics import has_errors
from cgraph.lint.gate import offline_hints
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust
from cgraph.testing.coverage import GraphCoverage, coverage
from cgraph.testing.reporters import REPORTERS
from cgraph.testing.runner import FileResult, Options, Runner, count

PASSED, FAILED, USAGE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class TestRequest:
    """What `cgraph test` was asked, parsed from its options."""

    paths: tuple[Path, ...]
    patterns: tuple[str, ...] = ()
    stop_first: bool = False
    model: str | None = None
    output: str = "text"
    coverage: bool = False
    fail_under: float | None = None
    html: Path | None = None
    record: Path | None = None
    trust: Trust = field(default_factory=Trust)
    """What the tested graphs may reach besides their folders."""
    limits: ReadLimits = field(default_factory=ReadLimits)


TestRequest.__test__ = False  # type: ignore[attr-defined]  # not a pytest class


def run_tests(request: TestRequest, out: IO[str], err: IO[str]) -> int:
    """Run every test file under `request.paths`; the exit code of `cgraph test`."""
    missing = [p for p in request.paths if not p.exists()]
    if missing:
        for path in missing:
            err.write(f"error: {path}: no such file or folder\n")
        return USAGE
    reporter = REPORTERS[request.output](out)
    options = Options(
        request.patterns,
        request.model,
        request.stop_first,
        request.record,
        request.trust,
        request.limits,
    )
    results = Runner(options, on_run=reporter.run).run_paths(request.paths)
    if not results:
        err.write(f"error: no *.test.yaml files under {', '.join(map(str, request.paths))}\n")
        return USAGE
    covered = coverage(results) if request.coverage else None
    reporter.finish(results, covered)
    if request.html is not None:
        from cgraph.testing.html import write_report

        write_report(request.html, results, covered or coverage(results))
        err.write(f"report: {request.html}\n")
    code = _exit_code(results, covered, request.fail_under, err)
    # Once per run however many files test a graph: the lines `cgraph run` prints offline.
    err.write(offline_hints(list(dict.fromkeys(d for f in results for d in f.hints))))
    return code


def _exit_code(
    results: list[FileResult],
    covered: list[GraphCoverage] | None,
    floor: float | None,
    err: IO[str],
) -> int:
    if any(has_errors(f.problems) for f in results):
        return USAGE
    linted = list(dict.fromkeys(d for f in results for d in f.lint))
    for diag in linted:
        err.write(diag.render() + "\n")
    if linted:
        err.write(f"{len(linted)} lint errors in the tested graphs: `cgraph run` refuses them\n")
    _, failed, _ = count(results)
    low = [c for c in covered or () if floor is not None and c.percent < floor]
    for c in low:
        err.write(f"coverage: {c.graph} takes {c.percent:.1f}% of its exits, under {floor:g}%\n")
    return FAILED if failed or low or linted else PASSED
