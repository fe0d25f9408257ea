"""The figures of a simulation, from its runs (`results.jsonl` lines) and the graph alone:
deterministic, and read off the session's state, never off the replies' prose.

Per persona and for the suite: success with a Wilson 95 % interval, runs wrongly ended
(END with the goal unmet) per the exit they ended by, turns to success and the excess over
the shortest declared path, pass^k and pass@k (τ-bench: per persona C(c,k)/C(n,k) and
1 - C(n-c,k)/C(n,k), averaged over personas), flaky personas (some runs pass, some fail),
fallback and clarification rates, guard hits, and the wrong-move rate with its confusion
pairs (the offline user knows the exit it meant). For the suite also: no-progress loops
with their cycles, stuck states, and the states and exits no run reached.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cgraph.draw.taken import declared, is_route
from cgraph.simulate.plan import Planner
from cgraph.simulate.run import exit_name
from cgraph.spec.model import Graph
from cgraph.spec.simfile import SimFile

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a success share (95 % by default); (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)
    return round(max(0.0, low), 4), round(min(1.0, high), 4)


def pass_hat(c: int, n: int, k: int) -> float | None:
    """pass^k: the chance that k runs drawn from n all pass, C(c,k)/C(n,k); None if k > n."""
    return None if k > n else math.comb(c, k) / math.comb(n, k)


def pass_at(c: int, n: int, k: int) -> float | None:
    """pass@k: the chance that at least one of k runs drawn from n passes."""
    return None if k > n else 1 - math.comb(n - c, k) / math.comb(n, k)


def percentile(values: Sequence[int], share: float) -> float | None:
    """The nearest-rank percentile (no interpolation: a turn count stays a count)."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(share * len(ordered)) - 1)])


def summarise(
    sim: SimFile,
    graph: Graph,
    records: Sequence[Mapping[str, Any]],
    ks: Iterable[int] = (1, 3),
    gate_on_judge: bool = False,
) -> dict[str, Any]:
    """The summary `summary.json` holds and every reporter reads; with `gate_on_judge`
    a run succeeds only if its judged criteria were met too."""
    if gate_on_judge:
        records = [
            {**r, "success": r["success"] and all(j["met"] for j in r["judged"])} for r in records
        ]
    planner = Planner(graph)
    ks = sorted(set(ks))
    by: dict[str, list[Mapping[str, Any]]] = {p.name: [] for p in sim.personas}
    for record in records:
        by.setdefault(record["persona"], []).append(record)
    personas = []
    for persona in sim.personas:
        shortest = planner.shortest_turns(persona.goal.reach, persona.goal.never)
        personas.append(_persona(persona.name, by[persona.name], shortest, ks))
    return {
        "graph": graph.name,
        "runs": len(records),
        "suite": _suite(personas, records, ks),
        "personas": personas,
        **_coverage(graph, records),
    }


def _persona(
    name: str, runs: Sequence[Mapping[str, Any]], shortest: int | None, ks: Sequence[int]
) -> dict[str, Any]:
    n, c = len(runs), sum(r["success"] for r in runs)
    turns = [t for r in runs for t in r["transcript"]]
    won = [r["turns"] for r in runs if r["success"]]
    verdicts = Counter(t["verdict"] for t in turns if t["verdict"])
    wrong_end = Counter(r["ended_at"] or "?" for r in runs if r["failure"] == "wrong_end")
    return {
        "name": name,
        "runs": n,
        "successes": c,
        "success": round(c / n, 4) if n else 0.0,
        "interval": list(wilson(c, n)),
        "outcomes": dict(sorted(Counter(r["outcome"] for r in runs).items())),
        "failures": dict(sorted(Counter(r["failure"] for r in runs if r["failure"]).items())),
        "wrongly_ended": sum(wrong_end.values()),
        "wrongly_ended_by": dict(sorted(wrong_end.items())),
        "turns_p50": percentile(won, 0.5),
        "turns_p90": percentile(won, 0.9),
        "shortest": shortest,
        "excess_p50": _excess(won, shortest),
        "pass^k": {str(k): _round(pass_hat(c, n, k)) for k in ks},
        "pass@k": {str(k): _round(pass_at(c, n, k)) for k in ks},
        "flaky": 0 < c < n,
        "judged": _judged(runs),
        **_rates(turns, verdicts),
        "user_calls": sum(r["user_calls"] for r in runs),
        "agent_calls": sum(r["agent_calls"] for r in runs),
        "tokens": sum(r["tokens"] for r in runs),
    }


def _rates(turns: Sequence[Mapping[str, Any]], verdicts: Counter[str]) -> dict[str, Any]:
    labelled = sum(verdicts.values())
    return {
        "turns": len(turns),
        "fallback_rate": _share(sum(t["fallback"] for t in turns), len(turns)),
        "clarification_rate": _share(sum(t["clarified"] for t in turns), len(turns)),
        "guard_hits": sum(1 for t in turns if t["guard"]),
        "moves": {
            "right": verdicts["right"],
            "wrong": verdicts["wrong"],
            "asked": verdicts["asked"],
        },
        "wrong_move_rate": _share(verdicts["wrong"], labelled),
    }


def _suite(
    personas: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]], ks: Sequence[int]
) -> dict[str, Any]:
    n, c = len(records), sum(r["success"] for r in records)
    turns = [t for r in records for t in r["transcript"]]
    verdicts = Counter(t["verdict"] for t in turns if t["verdict"])
    confusion = Counter(
        (t["state"], t["meant"], t["taken"]) for t in turns if t["verdict"] == "wrong"
    )
    ran = [p for p in personas if p["runs"]]
    return {
        "runs": n,
        "successes": c,
        "success": round(c / n, 4) if n else 0.0,
        "interval": list(wilson(c, n)),
        "wrongly_ended": sum(p["wrongly_ended"] for p in personas),
        "pass^k": {str(k): _mean([p["pass^k"][str(k)] for p in ran]) for k in ks},
        "pass@k": {str(k): _mean([p["pass@k"][str(k)] for p in ran]) for k in ks},
        "flaky": [p["name"] for p in personas if p["flaky"]],
        **_rates(turns, verdicts),
        "confusion": [
            {"state": s, "meant": m, "taken": t, "count": k}
            for (s, m, t), k in sorted(confusion.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "user_calls": sum(r["user_calls"] for r in records),
        "agent_calls": sum(r["agent_calls"] for r in records),
        "model_calls": sum(r["user_calls"] + r["agent_calls"] for r in records),
        "tokens": sum(r["tokens"] for r in records),
    }


def _coverage(graph: Graph, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    entered = {s for r in records for s in r["entered"]}
    taken = Counter(e for r in records for e in dict.fromkeys(r["edges"]))
    passed = Counter(e for r in records if r["success"] for e in dict.fromkeys(r["edges"]))
    loops = Counter(tuple(c) for r in records for c in r["loops"])
    stuck = Counter(r["stuck"] for r in records if r["stuck"])
    exits = [exit_name(k) for k in declared(graph) if not is_route(k[1])]
    return {
        "unreached_states": [s for s in graph.states if s not in entered],
        "unreached_exits": [e for e in exits if e not in taken],
        "traffic": {e: {"runs": k, "passed": passed[e]} for e, k in sorted(taken.items())},
        "loops": [
            {"cycle": list(c), "runs": k} for c, k in sorted(loops.items(), key=lambda kv: -kv[1])
        ],
        "stuck": [{"state": s, "runs": k} for s, k in sorted(stuck.items(), key=lambda kv: -kv[1])],
    }


def _judged(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each judged criterion and the share of runs a judge found it met in."""
    met: dict[str, list[bool]] = {}
    for run in runs:
        for verdict in run.get("judged", ()):
            met.setdefault(verdict["criterion"], []).append(bool(verdict["met"]))
    return {c: round(sum(v) / len(v), 4) for c, v in met.items()}


def _excess(won: Sequence[int], shortest: int | None) -> float | None:
    """Turns over the shortest declared path, at the median successful run."""
    median = percentile(won, 0.5)
    return None if median is None or shortest is None else median - shortest


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 4) if known else None
