"""The template-attack corpus (`template_attacks.yaml`) against lint and the renderer.

Lint must report on every attack without running it (in a subprocess with time and
memory limits); the renderer must either render it within budget with nothing of
Python's internals in the output, or fail with the one `RenderError`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.errors import RenderError
from cgraph.spec.templating import render_text, render_value
from tests.robustness.lint_probe import assert_survives

CORPUS: dict[str, list[str]] = yaml.safe_load(
    (Path(__file__).parent / "template_attacks.yaml").read_text(encoding="utf-8")
)
ATTACKS = [(kind, source) for kind, sources in CORPUS.items() for source in sources]
CONTEXT: dict[str, Any] = {"x": [1, 2], "user_name": "Ada"}
SECONDS = 0.5
# What an escape prints: a class, function or module of the interpreter.
LEAKS = ("<class", "<function", "<module", "<built-in", "<bound", "<method", "__globals__")


@pytest.mark.parametrize(
    ("kind", "source"),
    ATTACKS,
    ids=[f"{k}-{i}" for i, _ in enumerate(ATTACKS) for k in [ATTACKS[i][0]]],
)
@pytest.mark.parametrize("native", [False, True], ids=["text", "value"])
def test_an_attack_renders_harmlessly_within_budget_or_is_a_render_error(
    kind: str, source: str, native: bool
) -> None:
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


def test_lint_reports_every_attack_without_running_it(tmp_path: Path) -> None:
    states = {
        f"s{i}": {"type": "action", "objective": "o", "say": source, "next_state": "END"}
        for i, (_, source) in enumerate(ATTACKS)
    }
    graph = {"cgraph": 1, "variables": {"x": [1, 2]}, "states": states}
    path = tmp_path / "attacks.yaml"
    path.write_text(yaml.safe_dump(graph, width=10**6), encoding="utf-8")
    diagnostics = assert_survives(path)
    reported = {d["line"] for d in diagnostics}
    broken = [i for i, (kind, _) in enumerate(ATTACKS) if kind == "errors"]
    assert len(reported) >= len(broken) // 2  # syntax errors and unknown names are located
