"""The serving guide's webhook receiver, as a reader copies it: its `verified` accepts what
`cgraph serve` signs, and refuses a changed body, another secret and an old signature."""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Callable

import pytest

from cgraph.serve.webhooks import signature
from tests.unit.docs.pages import DOCS

SECRET = "whsec-0123456789abcdef"


def guides_verified(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, bytes], bool]:
    """The guide's imports, `SECRET` and `verified`, run (not its server, which would
    listen for ever)."""
    text = (DOCS / "guides" / "serving.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)\n```", text, re.S) if "def verified" in b]
    kept = [
        node
        for node in ast.parse(block).body
        if isinstance(node, ast.Import | ast.ImportFrom)
        or (isinstance(node, ast.FunctionDef) and node.name == "verified")
        or (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "SECRET")
    ]
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    found: dict[str, object] = {}
    exec(compile(ast.Module(kept, []), "serving.md", "exec"), found)
    verified = found["verified"]
    assert callable(verified)
    return verified  # type: ignore[return-value]


def test_the_guides_receiver_accepts_what_cgraph_signs_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verified = guides_verified(monkeypatch)
    body = json.dumps({"id": "evt_1", "type": "session.completed"}).encode()
    now = int(time.time())
    assert verified(signature(SECRET.encode(), now, body), body)
    assert not verified(signature(SECRET.encode(), now, body), body + b" ")
    assert not verified(signature(b"another secret", now, body), body)
    assert not verified(signature(SECRET.encode(), now - 3600, body), body)  # a replay
    assert not verified("", body)
