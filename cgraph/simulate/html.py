"""The HTML report of a simulation: one self-contained page (no CDN, nothing fetched).

The graph is drawn by `cgraph render`'s renderer (`cgraph.draw.picture`, with element ids
and every sub-graph opened); the page's script then sets each exit's width by the runs
that took it and its colour by the share of them that succeeded, greys what no run
reached, rings stuck states and marks the states of no-progress loops, all for the
personas the filter keeps. Below it, every run; a click shows its transcript, each turn
with the exit meant and the exit taken.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from cgraph.draw.picture import dot_source, edge_id, node_id, render
from cgraph.simulate.suite import SimResult
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph, GraphState

ASSETS = Path(__file__).with_name("report")
REPORT = "report.html"


def write_report(result: SimResult, summary: dict[str, Any], graph: Graph | None = None) -> Path:
    """Write `report.html` beside the run's `results.jsonl`; its path. `graph` is the
    simulated graph as the runs loaded it (default: loaded again, with nothing allowed)."""
    path = result.folder / REPORT
    path.write_text(page(result, summary, graph), encoding="utf-8")
    return path


def page(result: SimResult, summary: dict[str, Any], graph: Graph | None = None) -> str:
    """The whole page as text."""
    graph = graph or load_graph(result.sim.graph_path)
    opened = frozenset(n for n, s in graph.states.items() if isinstance(s, GraphState))
    svg = render(_quick(dot_source(graph, ids=True, opened=opened), graph), "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]  # the XML prologue and DOCTYPE do not belong inline
    data = {
        "summary": summary,
        "runs": [_run(r) for r in result.records],
        "edges": {name: edge_id(*_key(name)) for name in summary["traffic"]},
        "all_edges": [edge_id(*_key(e)) for e in summary["unreached_exits"]],
        "nodes": {name: node_id(name) for name in _states(result.records, graph.states)},
        "unreached": [node_id(s) for s in summary["unreached_states"]],
    }
    script = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    personas = "".join(
        f'<option value="{escape(p["name"])}">{escape(p["name"])}</option>'
        for p in summary["personas"]
    )
    suite = summary["suite"]
    head = (
        f"<h1>cgraph simulate — {escape(summary['graph'])}</h1>"
        f'<p class="meta">{escape(summary["file"])} · {summary["runs"]} runs · '
        f"success {suite['success']:.1%} (95% CI {suite['interval'][0]:.2f}–"
        f"{suite['interval'][1]:.2f}) · wrong moves {suite['wrong_move_rate']:.1%} · "
        f"{suite['model_calls']} model calls</p>"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>cgraph simulate — {escape(summary['graph'])}</title>"
        f"<style>{(ASSETS / 'report.css').read_text(encoding='utf-8')}</style></head><body>"
        f"<header>{head}<label>persona <select id=persona><option value=''>all personas"
        f"</option>{personas}</select></label><span id=legend></span></header>"
        f"<main><section id=picture>{svg}</section><section id=side>"
        f"<div id=findings></div><table id=runs></table></section>"
        f"<section id=transcript hidden></section></main>"
        f'<script id=data type="application/json">{script}</script>'
        f"<script>{(ASSETS / 'report.js').read_text(encoding='utf-8')}</script></body></html>\n"
    )


BIG = 60
"""States above which the layout is made quick: straight edges, fewer ranking passes
(Graphviz's spline routing takes minutes on a few hundred states)."""


def _quick(dot: str, graph: Graph) -> str:
    if len(graph.states) <= BIG:
        return dot
    head, _, body = dot.partition("\n")
    return f"{head}\n  graph [splines=line, nslimit=1, mclimit=0.1];\n{body}"


def _run(record: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "persona",
        "run",
        "seed",
        "session",
        "outcome",
        "success",
        "failure",
        "missing",
        "edges",
    )
    return {
        **{k: record[k] for k in keep},
        "entered": record["entered"],
        "stuck": record["stuck"],
        "loops": record["loops"],
        "transcript": record["transcript"],
    }


def _key(name: str) -> tuple[str, str]:
    source, _, exit_id = name.partition(" -> ")
    return source, exit_id


def _states(records: list[dict[str, Any]], declared: dict[str, Any]) -> list[str]:
    seen = dict.fromkeys(declared)
    for record in records:
        seen.update(dict.fromkeys(record["entered"]))
    return list(seen)
