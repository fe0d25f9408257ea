"""Reports of a simulation's summary: a terminal table per persona, the JSON summary, and
JUnit XML (a persona is a test case, failing under its thresholds). The HTML report is
`cgraph.simulate.html`. Each reporter is a function of the summaries and the breaches."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from cgraph.simulate.gates import Breach

Report = Callable[[Sequence[Mapping[str, Any]], Sequence[Breach]], str]


def text(summaries: Sequence[Mapping[str, Any]], breaches: Sequence[Breach]) -> str:
    """The terminal report: one table per sim file, then what the runs found."""
    return "\n".join(_text_one(s) for s in summaries) + _verdict(breaches)


def _text_one(summary: Mapping[str, Any]) -> str:
    runs = f"{summary['runs']} runs, {summary['user']} user"
    head = f"{summary['file']}: graph {summary['graph']}, {runs}"
    cols = (
        "persona",
        "runs",
        "success",
        "95% CI",
        "pass^k",
        "wrong end",
        "turns",
        "excess",
        "wrong moves",
    )
    rows: list[tuple[str, ...]] = [cols]
    for p in [*summary["personas"], {**summary["suite"], "name": "all personas"}]:
        rows.append(_row(p))
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    table = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([head, *table, *_findings(summary)]) + "\n"


def _row(p: Mapping[str, Any]) -> tuple[str, ...]:
    low, high = p["interval"]
    k = max(p["pass^k"], key=int, default=None)
    hat = p["pass^k"].get(k) if k else None
    moves = p["moves"]
    labelled = sum(moves.values())
    return (
        str(p["name"]),
        str(p["runs"]),
        f"{p['success']:.3f}",
        f"[{low:.2f}, {high:.2f}]",
        "-" if hat is None else f"^{k} {hat:.3f}",
        str(p["wrongly_ended"]),
        _num(p.get("turns_p50")),
        "-" if p.get("excess_p50") is None else f"+{p['excess_p50']:g}",
        f"{moves['wrong']}/{labelled}" if labelled else "-",
    )


def _findings(summary: Mapping[str, Any]) -> list[str]:
    suite = summary["suite"]
    lines = []
    if suite["flaky"]:
        lines.append("flaky personas: " + ", ".join(suite["flaky"]))
    for loop in summary["loops"]:
        lines.append(f"no-progress loop: {' → '.join(loop['cycle'])} ({_runs(loop['runs'])})")
    for stuck in summary["stuck"]:
        lines.append(f"stuck state: {stuck['state']} ({_runs(stuck['runs'])})")
    for pair in suite["confusion"][:5]:
        lines.append(
            f"wrong move in {pair['state']}: meant `{pair['meant']}`, took `{pair['taken']}`"
            f" ({pair['count']}×)"
        )
    for p in summary["personas"]:
        for criterion, share in p["judged"].items():
            lines.append(f"judged: {p['name']}: {criterion!r} met in {share:.0%} of runs")
        for path, n in p["wrongly_ended_by"].items():
            lines.append(f"wrongly ended: {p['name']} by `{path}` ({_runs(n)})")
    if summary["unreached_states"]:
        lines.append("states never reached: " + ", ".join(summary["unreached_states"]))
    if summary["unreached_exits"]:
        lines.append("exits never taken: " + ", ".join(summary["unreached_exits"]))
    rates = (
        f"fallbacks {suite['fallback_rate']:.1%}, clarifications {suite['clarification_rate']:.1%}"
    )
    calls = f"model calls {suite['model_calls']}, tokens {suite['tokens']}"
    lines.append(f"{rates}, guard hits {suite['guard_hits']}; {calls}; {summary['seconds']:.1f} s")
    lines.append(f"results: {summary['results']}")
    return lines


def _verdict(breaches: Sequence[Breach]) -> str:
    if not breaches:
        return "thresholds held\n"
    return "".join(f"below threshold: {b}\n" for b in breaches)


def json_report(summaries: Sequence[Mapping[str, Any]], breaches: Sequence[Breach]) -> str:
    """The summaries and breaches as one JSON document."""
    body = {
        "simulations": list(summaries),
        "breaches": [
            {"persona": b.persona, "name": b.name, "value": b.value, "threshold": b.threshold}
            for b in breaches
        ],
        "passed": not breaches,
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def junit(summaries: Sequence[Mapping[str, Any]], breaches: Sequence[Breach]) -> str:
    """JUnit XML: a suite per sim file, a case per persona, failed under a threshold."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for summary in summaries:
        personas = summary["personas"]
        failed = {b.persona for b in breaches if b.file == summary["file"]}
        out.append(
            f'  <testsuite name={quoteattr(summary["file"])} tests="{len(personas)}"'
            f' failures="{len(failed & {p["name"] for p in personas})}">'
        )
        for p in personas:
            names = f"classname={quoteattr(summary['graph'])} name={quoteattr(p['name'])}"
            out.append(f"    <testcase {names}>")
            mine = [b for b in breaches if b.file == summary["file"] and b.persona == p["name"]]
            if mine:
                said = "; ".join(str(b) for b in mine)
                out.append(
                    f"      <failure message={quoteattr(said)}>{escape(_detail(p))}</failure>"
                )
            out.append(f"      <system-out>{escape(_detail(p))}</system-out>")
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _detail(p: Mapping[str, Any]) -> str:
    low, high = p["interval"]
    return (
        f"{p['successes']}/{p['runs']} runs succeeded (95% CI {low:.2f}-{high:.2f}); "
        f"outcomes {p['outcomes']}; failures {p['failures']}"
    )


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


REPORTERS: dict[str, Report] = {"text": text, "json": json_report, "junit": junit}
