"""The tool worker's start: only what running a handler needs, nothing of the engine."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# What a session imports and a worker must not: its start is part of a tool's first call.
NOT_IN_WORKER = (
    "litellm",
    "chromadb",
    "onnxruntime",
    "jinja2",
    "jsonschema",
    "pydantic",
    "cgraph.runtime.turn.engine",
    "cgraph.session",
    "cgraph.spec.model",
    "cgraph.backends",
)


def test_the_worker_imports_nothing_of_the_session() -> None:
    code = (
        "import sys; from cgraph.runtime.tools.worker import serve;"
        f"print(sorted(m for m in {NOT_IN_WORKER!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stderr
