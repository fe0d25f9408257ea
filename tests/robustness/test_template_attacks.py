"""The template-attack corpus (`template_attacks.yaml`) against the renderer, lint and run.

The renderer must either render an attack within budget with nothing of Python's
internals in the output, or fail with the one `RenderError`. `cgraph lint` (a subprocess
with time and memory limits, never running a template) must reject or accept each
attack in each field as the corpus says. `cgraph run` (a subprocess per attack and
field, offline semantic mode) must end a turn whose render fails with the fallback
reply and a `render_failed` event, never show the template, and move on when resumed.

`make test` runs the attacks the corpus marks `sample` in their sample field;
`CGRAPH_TEMPLATE_ATTACKS=all` (`make stress`) runs every attack in every field.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.errors import RenderError
from cgraph.spec.templating import render_text, render_value
from tests.robustness.lint_probe import lint
from tests.robustness.run_probe import (
    EVENT_FIELDS,
    FALLBACK,
    FIELDS,
    replies,
    run,
    stored,
    write_graph,
)

CORPUS: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parent / "template_attacks.yaml").read_text(encoding="utf-8")
)
ATTACKS: list[dict[str, Any]] = CORPUS["attacks"]
CONTEXT: dict[str, Any] = {"x": [1, 2], "user_name": "Ada"}
SECONDS = 0.5
# What an escape prints: a class, function or module of the interpreter.
LEAKS = ("<class", "<function", "<module", "<built-in", "<bound", "<method", "__globals__")
EVERY = os.environ.get("CGRAPH_TEMPLATE_ATTACKS", "") == "all"


@dataclass(frozen=True)
class Case:
    """One attack placed in one field, with what lint and run must do with it."""

    number: int
    template: str
    field: str
    lint: str  # "rejects" or "accepts"
    run: str  # "fails" or "renders" (where lint accepts)
    sample: bool

    @property
    def id(self) -> str:
        return f"{self.number}-{self.field}"


def _cases() -> list[Case]:
    cases = []
    for number, attack in enumerate(ATTACKS):
        for field in attack["fields"]:
            assert field in FIELDS, field
            override = attack.get("except", {}).get(field, {})
            expected = {"lint": attack["lint"], "run": attack.get("run", ""), **override}
            sample = attack.get("sample") == field
            cases.append(Case(number, attack["template"], field, **expected, sample=sample))
    return cases


CASES = _cases()
RUN_CASES = [c for c in CASES if c.lint == "accepts" and (EVERY or c.sample)]
random.Random(0).shuffle(RUN_CASES)  # a run cut short has still tried every kind of attack


@pytest.mark.parametrize("attack", ATTACKS, ids=[str(n) for n in range(len(ATTACKS))])
@pytest.mark.parametrize("native", [False, True], ids=["text", "value"])
def test_an_attack_renders_harmlessly_within_budget_or_is_a_render_error(
    attack: dict[str, Any], native: bool
) -> None:
    source = attack["template"]
    render = render_value if native else render_text
    start = time.monotonic()
    try:
        output = render(source, CONTEXT, seconds=SECONDS)
    except RenderError as err:
        assert err.template == source
        assert err.cause
    else:
        shown = output if isinstance(output, str) else json.dumps(output, default=repr)
        assert len(shown) <= 1_000_000
        assert not any(leak in shown for leak in LEAKS), shown[:300]
    assert time.monotonic() - start < SECONDS + 4  # the deadline, plus a busy machine


def test_lint_rejects_or_accepts_each_attack_in_each_field_as_the_corpus_says(
    tmp_path: Path,
) -> None:
    """One `cgraph lint` of a folder holding a graph per attack and field."""
    cases = {tmp_path / c.id / "graph.yaml": c for c in CASES}
    for path, case in cases.items():
        write_graph(path.parent, case.field, case.template)
    done = lint(tmp_path)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # never a crash signal
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    diagnostics = json.loads(done.stdout)
    errors = {Path(d["file"]).resolve() for d in diagnostics if d["severity"] == "error"}
    found = {c.id: "rejects" if p.resolve() in errors else "accepts" for p, c in cases.items()}
    assert found == {case.id: case.lint for case in cases.values()}


def _check_failed_turn(case: Case, turn: dict[str, Any], out: str, store: Path) -> None:
    assert turn["reply"] == FALLBACK and turn["fallback"] is True, turn
    assert case.template not in out  # neither the reply nor anything else printed
    failed = [data for number, _, data in stored(store, "render_failed") if number == 1]
    fields = {data["field"] for data in failed}
    # A failing fallback is met once the say has failed first (see `attack_graph`).
    field = EVENT_FIELDS.get(case.field, case.field)
    assert fields == ({"say", "fallback"} if field == "fallback" else {field}), failed
    assert all(data["cause"] and data["state"] for data in failed), failed


def _check_rendered_turn(case: Case, turn: dict[str, Any], store: Path) -> None:
    failed = {data["field"] for _, _, data in stored(store, "render_failed")}
    assert failed == ({"say"} if case.field == "fallback" else set()), failed  # see above
    shown = json.dumps([turn, *(data for _, _, data in stored(store))])
    assert not any(leak in shown for leak in LEAKS), shown[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("case", RUN_CASES, ids=[c.id for c in RUN_CASES])
def test_cgraph_run_survives_an_attack_lint_accepts(tmp_path: Path, case: Case) -> None:
    graph, store = write_graph(tmp_path / "graph", case.field, case.template), tmp_path / "store"
    first = run(graph, store, "hi\n")
    (turn,) = replies(first, case.id)
    if case.run == "fails":
        _check_failed_turn(case, turn, first.stdout + first.stderr, store)
    else:
        _check_rendered_turn(case, turn, store)

    # Resumed, the session takes a new turn: the failed step is not run again in turn 1.
    again = run(graph, store, "again\n", "--session", turn["session"])
    (second,) = replies(again, case.id)
    assert second["turn"] == 2 and not second.get("recovered"), second
    events = stored(store)
    assert [n for n, kind, _ in events if kind == "turn_completed"] == [1, 2]
    assert [d["text"] for _, kind, d in events if kind == "user_message"] == ["hi", "again"]
    failed_first = [d for n, kind, d in events if kind == "render_failed" and n == 1]
    # The attack's own failure, and in the fallback case the say's that shows it.
    assert len(failed_first) == (case.run == "fails") + (case.field == "fallback")
