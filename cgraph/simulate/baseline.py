"""`--baseline`: this simulation beside an earlier one, persona by persona.

The baseline is a `summary.json` a simulation wrote, or the `--format json` report (its
`simulations`). A persona whose success share fell below the baseline's Wilson interval is
marked a regression: a drop inside the interval is what seeds alone can do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cgraph.errors import InputError


def read(path: Path) -> list[dict[str, Any]]:
    """The summaries in a baseline file; `InputError` when it holds none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"--baseline {path}: cannot read it as JSON ({err})") from err
    found = data.get("simulations", [data]) if isinstance(data, dict) else None
    if not isinstance(found, list) or not all(
        isinstance(s, dict) and isinstance(s.get("personas"), list) for s in found
    ):
        raise InputError(f"--baseline {path}: not a simulation summary (summary.json)")
    return found


def compare(baseline: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]) -> str:
    """A table of success, pass^k and wrong-move rate, then and now, per persona."""
    before = {(s.get("graph"), p["name"]): p for s in baseline for p in s["personas"]}
    lines = ["baseline comparison (then → now):"]
    for summary in now:
        for p in summary["personas"]:
            old = before.get((summary["graph"], p["name"]))
            if old is None:
                lines.append(f"  {p['name']}: new persona, success {p['success']:.3f}")
                continue
            lines.append("  " + _line(p, old))
    return "\n".join(lines) + "\n"


def _line(p: Mapping[str, Any], old: Mapping[str, Any]) -> str:
    low = old["interval"][0]
    mark = (
        " REGRESSION"
        if p["success"] < low
        else (" improved" if p["success"] > old["interval"][1] else "")
    )
    k = max(p["pass^k"], key=int)
    then_k, now_k = old.get("pass^k", {}).get(k), p["pass^k"].get(k)
    return (
        f"{p['name']}: success {old['success']:.3f} → {p['success']:.3f}, "
        f"pass^{k} {_f(then_k)} → {_f(now_k)}, wrong moves "
        f"{_f(old.get('wrong_move_rate'))} → {_f(p['wrong_move_rate'])}{mark}"
    )


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"
