"""Reporters of a test run: one ABC, a name → class table, one class per format.

Text and GitHub print each run as it finishes (`started`/`run`), then a closing; JSON and
JUnit write one document at the end.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from cgraph.testing.coverage import GraphCoverage
from cgraph.testing.explain import failure_lines
from cgraph.testing.runner import FileResult, RunResult, count, decisions, graph_decisions


class Reporter(ABC):
    """Writes a test run to `out`."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def run(self, result: RunResult) -> None:  # noqa: B027 - most formats print at the end
        """One run has finished (streamed formats print it now)."""

    @abstractmethod
    def finish(self, results: list[FileResult], covered: list[GraphCoverage] | None) -> None:
        """Every file has run; `covered` is given with `--coverage`."""


def summary(results: list[FileResult]) -> str:
    """`N passed, N failed` and `, N skipped` when some were: the closing line."""
    passed, failed, skipped = count(results)
    line = f"{passed} passed, {failed} failed"
    return line + (f", {skipped} skipped" if skipped else "")


def decision_lines(results: list[FileResult]) -> list[str]:
    """A line per graph and model, `decisions of g.yaml with semantic: 20/21 right (95.2 %),
    1 wrong, 0 asked`, then the run's, `decisions: 41/44 right (93.2 %), 2 wrong, 1 asked`;
    none when no turn expects a `state` or `exits`. A decision is such a
    turn (`cgraph.testing.decisions`): asked is a turn that asked the user which exit they
    meant instead of moving."""
    total = decisions(results)
    if not total.total:
        return []
    per_graph = [f"decisions of {g} with {m}: {t.line()}" for g, m, t in graph_decisions(results)]
    return [*per_graph, f"decisions: {total.line()}"]


def decisions_json(results: list[FileResult]) -> dict[str, Any]:
    graphs = [{"graph": str(g), "model": m, **t.as_json()} for g, m, t in graph_decisions(results)]
    return {**decisions(results).as_json(), "graphs": graphs}


def file_problems(results: list[FileResult]) -> list[str]:
    return [d.render() for r in results for d in r.problems]


class TextReporter(Reporter):
    """`✓ name (0.12s)` per run, a located diff per failure, the coverage table, a summary."""

    def run(self, result: RunResult) -> None:
        mark = "✓" if result.passed else "✗"
        self.out.write(f"{mark} {result.file.name}: {result.name} ({result.seconds:.2f}s)\n")
        for line in run_failure(result):
            self.out.write(f"    {line}\n")
        self.out.flush()

    def finish(self, results: list[FileResult], covered: list[GraphCoverage] | None) -> None:
        for line in file_problems(results):
            self.out.write(line + "\n")
        if covered is not None:
            self.out.write(coverage_table(covered))
        for line in decision_lines(results):
            self.out.write(line + "\n")
        self.out.write(summary(results) + "\n")


def run_failure(result: RunResult) -> list[str]:
    """The lines explaining a failed run (none for a passed one)."""
    lines = [f"error: {result.error}"] if result.error else []
    for turn in result.turns:
        if turn.mismatches:
            lines += failure_lines(turn, turn.observed.user)
    return lines


def coverage_table(covered: list[GraphCoverage]) -> str:
    """The coverage table, then a located line for every exit no case takes."""
    rows = [("graph", "states", "exits", "cover")]
    for c in covered:
        states = f"{len(c.entered)}/{len(c.states)}"
        exits = f"{len(c.taken)}/{len(c.exits)}"
        rows.append((str(c.graph), states, exits, f"{c.percent:.0f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(_cell(v, w, i) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
        for row in rows
    ]
    for c in covered:
        for u in c.uncovered:
            lines.append(f"{c.graph}:{u.line}:{u.column} {u.name} not taken")
    return "\n".join(lines) + "\n"


def _cell(value: str, width: int, index: int) -> str:
    return value.ljust(width) if index == 0 else value.rjust(width)


class JsonReporter(Reporter):
    """One JSON object: every run with its turns, the coverage, and the counts."""

    def finish(self, results: list[FileResult], covered: list[GraphCoverage] | None) -> None:
        passed, failed, skipped = count(results)
        document: dict[str, Any] = {
            "runs": [run_json(r) for f in results for r in f.runs],
            "problems": [d.as_dict() for f in results for d in f.problems],
            "passed": passed,
            "failed": failed,
            "skipped": skipped,
            "decisions": decisions_json(results),
        }
        if covered is not None:
            document["coverage"] = [c.as_json() for c in covered]
        json.dump(document, self.out, indent=2, ensure_ascii=False)
        self.out.write("\n")


def run_json(result: RunResult) -> dict[str, Any]:
    return {
        "file": str(result.file),
        "name": result.name,
        "passed": result.passed,
        "seconds": round(result.seconds, 4),
        "error": result.error,
        "failure": run_failure(result),
        "turns": [
            {
                "user": t.observed.user,
                "reply": t.observed.reply,
                "state": t.observed.state,
                "path": list(t.observed.path),
                "exits": t.observed.exit_names(),
                "mismatches": [m.message for m in t.mismatches],
                "decision": t.verdict,
                "clarified": t.observed.clarified,
                "choices": [
                    {"state": d.state, "chosen": d.chosen, "confidence": d.confidence}
                    for d in t.observed.decisions
                ],
            }
            for t in result.turns
        ],
    }


class JUnitReporter(Reporter):
    """JUnit XML: a testsuite per file, a testcase per run, the failure's lines as text;
    with coverage, a last `coverage` testsuite of no tests whose properties give each
    graph's share and whose output is the coverage table with the uncovered exits."""

    def finish(self, results: list[FileResult], covered: list[GraphCoverage] | None) -> None:
        passed, failed, _ = count(results)
        self.out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        total = passed + failed
        self.out.write(f'<testsuites name="cgraph" tests="{total}" failures="{failed}">\n')
        for f in results:
            self._suite(f)
        if covered is not None:
            self._coverage(covered)
        self.out.write("</testsuites>\n")

    def _coverage(self, covered: list[GraphCoverage]) -> None:
        self.out.write('  <testsuite name="coverage" tests="0" failures="0">\n    <properties>\n')
        for c in covered:
            value = f"{len(c.taken)}/{len(c.exits)} exits ({c.percent:.1f}%)"
            self.out.write(
                f"      <property name={quoteattr(str(c.graph))} value={quoteattr(value)}/>\n"
            )
        self.out.write("    </properties>\n")
        self.out.write(f"    <system-out>{escape(coverage_table(covered))}</system-out>\n")
        self.out.write("  </testsuite>\n")

    def _suite(self, result: FileResult) -> None:
        failed = sum(not r.passed for r in result.runs) + (1 if result.problems else 0)
        name = quoteattr(str(result.file))
        head = f'  <testsuite name={name} tests="{len(result.runs)}" failures="{failed}"'
        self.out.write(f'{head} skipped="{result.skipped}">\n')
        for problem in result.problems:
            message = quoteattr(problem.message)
            self.out.write(
                f'    <testcase name="load" classname={name}>'
                f"<failure message={message}>{escape(problem.render())}</failure>"
                "</testcase>\n"
            )
        for run in result.runs:
            self.out.write(
                f"    <testcase name={quoteattr(run.name)} classname={name} "
                f'time="{run.seconds:.3f}"'
            )
            if run.passed:
                self.out.write("/>\n")
                continue
            text = escape("\n".join(run_failure(run)))
            first = quoteattr(run_failure(run)[0])
            self.out.write(f"><failure message={first}>{text}</failure></testcase>\n")
        self.out.write("  </testsuite>\n")


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: an `::error` per failed run and uncovered exit."""

    def run(self, result: RunResult) -> None:
        if result.passed:
            return
        lines = run_failure(result)
        message = "%0A".join(_gh(line) for line in lines)
        self.out.write(f"::error file={result.file},title={_gh(result.name)}::{message}\n")

    def finish(self, results: list[FileResult], covered: list[GraphCoverage] | None) -> None:
        for f in results:
            for d in f.problems:
                where = f"file={d.file},line={d.line},col={d.column}"
                self.out.write(f"::error {where},title={d.code}::{_gh(d.message)}\n")
        for c in covered or ():
            for u in c.uncovered:
                where = f"file={c.graph},line={u.line},col={u.column}"
                text = f"{u.name} is taken by no test case"
                self.out.write(f"::warning {where},title=uncovered exit::{text}\n")
        for line in decision_lines(results):
            self.out.write(line + "\n")
        self.out.write(summary(results) + "\n")


def _gh(text: str) -> str:
    """Escaped for a workflow command's message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


REPORTERS: dict[str, type[Reporter]] = {
    "text": TextReporter,
    "json": JsonReporter,
    "junit": JUnitReporter,
    "github": GithubReporter,
}
