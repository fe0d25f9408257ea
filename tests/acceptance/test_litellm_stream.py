"""`Session.stream` through the real litellm against a local streaming server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.stream_server import StreamServer
from cgraph.runtime.records import Turn
from cgraph.runtime.session import Session
from cgraph.runtime.streaming import Delta
from tests.unit.runtime.test_streaming import LONG, two_states

pytestmark = pytest.mark.slow


def test_the_reply_streams_through_litellm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    answer = json.dumps({"exit": "stay", "reason": "greeting", "reply": LONG})
    with StreamServer(answer, pieces=30, delay=0.001) as server:
        session = Session.start(two_states(tmp_path), model="openai/test-model",
                                api_base=server.base)  # fmt: skip
        *chunks, turn = session.stream("hi")
    assert server.bodies[0]["stream"] is True
    assert server.bodies[0]["response_format"]["type"] == "json_schema"
    assert isinstance(turn, Turn) and turn.reply == LONG
    deltas = [c for c in chunks if isinstance(c, Delta)]
    assert len(deltas) > 5 and "".join(d.text for d in deltas) == LONG
