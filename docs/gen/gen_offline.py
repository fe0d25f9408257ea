"""The offline chooser's thresholds and weights, generated from the code that uses them.

`Calibration` (`cgraph/backends/offline/calibration.py`) holds every bar of the ask
policy with its default and a docstring per field; `weights.json` holds the fitted
weights and the bars chosen when they were fitted, which `Calibration.fitted` applies.
This page shows both, and the value in force, computed by that same method; the rule
that uses the bars is the policy module's own docstring. Other pages quote a value as
`{{ cal.NAME }}`, which the build replaces with the value in force (see `hooks.py`).
"""

from __future__ import annotations

import ast
import itertools
import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from cgraph.backends.offline import policy
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.features import EXIT_FEATURES, STAY_FEATURES
from cgraph.backends.offline.lexicon import LEXICON

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = ROOT / "cgraph" / "backends" / "offline"


def shipped() -> dict[str, Any]:
    """The fitted weights and bars, as the package ships them."""
    data: dict[str, Any] = json.loads((OFFLINE / "weights.json").read_text(encoding="utf-8"))
    return data


def in_force() -> Calibration:
    """The calibration a session uses: the defaults with the fitted bars applied."""
    return Calibration.fitted(shipped().get("calibration", {}))


def value(name: str) -> str:
    """One threshold in force, as text (`0.4`)."""
    if name not in {f.name for f in fields(Calibration)}:
        raise KeyError(f"Calibration has no field `{name}`")
    return _number(getattr(in_force(), name))


def field_docs() -> dict[str, str]:
    """Each field's docstring, read from the source as the schema reads the model's."""
    tree = ast.parse((OFFLINE / "calibration.py").read_text(encoding="utf-8"))
    docs: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Calibration":
            body = node.body
            for stmt, nxt in itertools.pairwise(body):
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
                    docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def page() -> str:
    data = shipped()
    fitted = data.get("calibration", {})
    force = in_force()
    docs = field_docs()
    about = data.get("about", {})
    lines = [
        "# Offline chooser",
        "",
        "The numbers behind the offline mode, generated at each build from the code: the "
        "thresholds of `Calibration` (`cgraph/backends/offline/calibration.py`), the bars "
        "and weights fitted by `bench/fit_chooser.py` and shipped in "
        "`cgraph/backends/offline/weights.json`, and the rule that uses them (the "
        "docstring of `cgraph/backends/offline/policy.py`). What the mode is for: "
        "[The offline mode](../concepts/offline.md).",
        "",
        "## Take, stay or ask",
        "",
        _markdown_docstring(policy.__doc__ or ""),
        "",
        "## Thresholds",
        "",
        "*In force* is what a session uses: the fitted value where `weights.json` has "
        "one, else the default.",
        "",
        "| threshold | in force | default | fitted | meaning |",
        "|---|---|---|---|---|",
    ]
    for spec in fields(Calibration):
        name = spec.name
        row = [
            f"`{name}`{{#{name.replace('_', '-')}}}",
            f"**{_number(getattr(force, name))}**",
            _number(spec.default),
            _number(fitted[name]) if name in fitted else "—",
            docs.get(name, "").replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", *acts_table(), "", "## The fitted weights", ""]
    if about:
        lines += [_about(about), ""]
    lines += weights_table(data)
    return "\n".join(lines) + "\n"


def acts_table() -> list[str]:
    """The shipped dialogue acts (`lexicon.yaml`), which a graph's `acts:` may replace."""
    lines = [
        "## Dialogue acts",
        "",
        "An exit whose description is this near an act's is also matched on the act's "
        "examples. These ship in `cgraph/backends/offline/lexicon.yaml`, with every word "
        f"list and pattern the chooser reads ({len(LEXICON.lists)} lists, "
        f"{sum(len(w) for w in LEXICON.lists.values()) + len(LEXICON.STOP_WORDS):,} "
        f"entries, {len(LEXICON.patterns)} patterns); a graph replaces one by its name, "
        "or adds its own, under `acts:`.",
        "",
        "| act | description | floor | negative only | examples |",
        "|---|---|---|---|---|",
    ]
    for act in LEXICON.ACTS:
        floor = _number(act.floor) if act.floor is not None else "`act_floor`"
        examples = "; ".join(act.examples).replace("|", "\\|")
        negative = "yes" if act.negative else ""
        lines.append(f"| `{act.name}` | {act.description} | {floor} | {negative} | {examples} |")
    return lines


def _about(about: dict[str, Any]) -> str:
    sets = ", ".join(str(s) for s in about.get("fitted_on", []))
    parts = [f"Fitted on {sets}" if sets else "Fitted"]
    if "choices" in about:
        parts.append(f"{about['choices']:,} labelled choices")
    if "out_of_fold_top1" in about:
        parts.append(f"{float(about['out_of_fold_top1']) * 100:.1f} % top-1 out of fold")
    if "penalty" in about:
        parts.append(f"L2 penalty {about['penalty']}")
    return "; ".join(parts) + "."


def weights_table(data: dict[str, Any]) -> list[str]:
    weights = dict(zip(data["features"], data["weights"], strict=True))
    lines = [
        "A candidate's logit is its feature row times these weights, and the chooser's "
        "confidence in each candidate is the softmax of the logits (a conditional logit). "
        "A feature the shipped weights do not name weighs 0.",
        "",
        "| feature | row | weight |",
        "|---|---|---|",
    ]
    for kind, names in (("exit", EXIT_FEATURES), ("stay", STAY_FEATURES)):
        for name in names:
            weight = weights.get(name)
            shown = f"{weight:+.3f}" if weight is not None else "0 (not fitted)"
            lines.append(f"| `{name}` | {kind} | {shown} |")
    return lines


def _markdown_docstring(text: str) -> str:
    """A module docstring as Markdown: its first paragraph, then its list."""
    lines = text.strip().splitlines()
    return "\n".join(line[2:] if line.startswith("  ") else line for line in lines)


def _number(value: Any) -> str:
    number = float(value)
    return f"{number:g}"


if __name__ == "__main__":
    print(page())
