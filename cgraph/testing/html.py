"""`cgraph test --html FILE`: one self-contained page a designer looks at.

Per graph: the picture with covered exits in green and uncovered ones dashed red (the
`on_error` and `on_limit` routes dotted), the uncovered exits and routes located, then
every run with its transcript, path, each turn's decision (right, wrong or asked, and
how sure its choices were) and failure.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from cgraph.draw.picture import Highlight, dot_source, render
from cgraph.errors import ConfigError
from cgraph.spec.model import Graph
from cgraph.testing.coverage import GraphCoverage, Uncovered
from cgraph.testing.decisions import choices, tally
from cgraph.testing.reporters import decision_lines, run_failure, summary
from cgraph.testing.runner import FileResult, RunResult, TurnResult

_CSS = Path(__file__).with_name("report.css")


def write_report(path: Path, results: list[FileResult], covered: list[GraphCoverage]) -> None:
    """Write the report; the folder is created when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report(results, covered), encoding="utf-8")


def report(results: list[FileResult], covered: list[GraphCoverage]) -> str:
    """The whole page as text."""
    sections = [_graph_section(c, _runs_of(c, results), _spec_of(c, results)) for c in covered]
    lines = "".join(f"<div>{escape(line)}</div>" for line in decision_lines(results))
    decided = f'<div class="meta">{lines}</div>' if lines else ""
    head = f"<header><h1>cgraph test — {escape(summary(results))}</h1>{decided}</header>"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>cgraph test report</title><style>{_CSS.read_text(encoding='utf-8')}</style></head>"
        f"<body>{head}<main>{''.join(sections)}</main></body></html>\n"
    )


def _runs_of(graph: GraphCoverage, results: list[FileResult]) -> list[RunResult]:
    key = graph.graph.resolve()
    return [r for f in results if f.graph and f.graph.resolve() == key for r in f.runs]


def _spec_of(graph: GraphCoverage, results: list[FileResult]) -> Graph | None:
    """The graph as its tests loaded it: with the run's trust and limits."""
    key = graph.graph.resolve()
    tested = (f for f in results if f.graph_spec and f.graph and f.graph.resolve() == key)
    return next((f.graph_spec for f in tested), None)


def _graph_section(c: GraphCoverage, runs: list[RunResult], spec: Graph | None) -> str:
    passed = sum(r.passed for r in runs)
    meta = (
        f"{len(c.taken)}/{len(c.exits)} exits taken ({c.percent:.0f}%) · "
        f"{len(c.entered)}/{len(c.states)} states entered · {passed}/{len(runs)} runs passed"
    )
    decided = tally(t.verdict for r in runs for t in r.turns)
    meta += f" · decisions {decided.line()}" if decided.total else ""
    bar = f'<span class="bar"><span style="width:{c.percent:.1f}%"></span></span>'
    missing = "".join(
        f"<li>{escape(str(c.graph))}:{u.line}:{u.column} {_named(u)} is taken by no case</li>"
        for u in c.uncovered
    )
    return (
        f'<section class="graph"><h2>{escape(c.name)}</h2>'
        f'<div class="meta">{escape(str(c.graph))} · {escape(meta)} {bar}</div>'
        f"{_LEGEND}{_picture(c, spec)}"
        f"{f'<ul class=uncovered>{missing}</ul>' if missing else ''}"
        f"{''.join(_run(r) for r in runs)}</section>"
    )


def _named(u: Uncovered) -> str:
    return u.named(lambda name: f"<b>{escape(name)}</b>")


_LEGEND = (
    '<p class="legend"><span><i class="swatch" style="border-color:#15803d"></i>exit taken</span>'
    '<span><i class="swatch" style="border-color:#dc2626;border-top-style:dashed"></i>'
    "exit no case takes</span><span>"
    '<i class="swatch" style="border-color:#475569;border-top-style:dotted"></i>'
    "route the runtime takes (on_error, on_limit)</span>"
    "<span>greyed: state never entered</span></p>"
)


def _picture(c: GraphCoverage, spec: Graph | None) -> str:
    from cgraph.spec.load import load_graph

    highlight = Highlight(taken=c.taken, entered=c.entered)
    try:
        svg = render(dot_source(spec or load_graph(c.graph), highlight), "svg").decode()
    except ConfigError as err:
        return f'<p class="fail">No picture: {escape(err.message)}</p>'
    start = svg.find("<svg")
    return f'<div class="picture">{svg[start:]}</div>'


def _decision(turn: TurnResult) -> str:
    """The turn's verdict as a decision and how sure its choices were: `right · date
    (confidence 0.88)`, `asked · clarify (asked the user)`."""
    return " · ".join([*([turn.verdict] if turn.verdict else []), *choices(turn.observed)])


def _run(run: RunResult) -> str:
    mark = '<span class="pass">✓</span>' if run.passed else '<span class="fail">✗</span>'
    rows = "".join(
        f"<tr><td>{escape(t.observed.user)}</td><td>{escape(t.observed.reply)}</td>"
        f'<td class="path">{escape(" → ".join(t.observed.path))}</td>'
        f"<td>{escape(_decision(t))}</td></tr>"
        for t in run.turns
    )
    failure = "\n".join(run_failure(run))
    head = "<tr><th>user</th><th>reply</th><th>path</th><th>decision</th></tr>"
    body = f"<table>{head}{rows}</table>" + (f"<pre>{escape(failure)}</pre>" if failure else "")
    opened = "" if run.passed else " open"
    title = f"{mark} {escape(run.name)} <small>({run.seconds:.2f}s)</small>"
    return f'<details class="run"{opened}><summary>{title}</summary>{body}</details>'
