"""A streamed answer is bounded by the turn's deadline and by a size cap, end to end:
through the real litellm against local servers that drip a word every so often forever,
stall once their headers are sent, or stream megabytes. Each turn ends soon after its
deadline with the fallback reply, an audited `llm_error`, and nothing half-shown left
standing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import MAX_STREAMED_CHARS, LiteLLMModel, warm_up
from cgraph.runtime.ask.streaming import Delta, Retracted
from cgraph.runtime.state.records import Turn
from cgraph.session import Session
from tests.servers.chat import OPENAI, ChatServer, serve
from tests.unit.runtime.test_streaming import two_states

pytestmark = pytest.mark.slow
DEADLINE = 1.5
MARGIN = 1.5
"""What a turn may take past its deadline: the fallback, the commit, a busy machine."""
HUGE = "All work and no play. " * 1_000_000  # 22 MB


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")


def dripping() -> Any:
    return serve(OPENAI, drip=0.3)


def stalling() -> Any:
    answer = {"exit": "stay", "reason": "r", "reply": "A reply that stops half way"}
    return serve(OPENAI, answers=[answer], piece=4, hold_after=14)


def huge() -> Any:
    answer = {"exit": "stay", "reason": "r", "reply": HUGE}
    # A runaway: a server that does not stop at the request's `max_tokens`.
    return serve(OPENAI, answers=[answer], piece=64_000, chars_per_token=10**6)


SERVERS = {"drip forever": dripping, "stall after headers": stalling, "huge stream": huge}


def stream_turn(session: Session) -> tuple[list[Any], Turn, float]:
    started = time.monotonic()
    *chunks, turn = session.stream("hi", remember=False)
    assert isinstance(turn, Turn)
    return chunks, turn, time.monotonic() - started


def start(tmp_path: Path, server: ChatServer) -> Session:
    warm_up()  # the first turn's imports come before its deadline: time the server only
    model = LiteLLMModel("openai/local", api_base=server.base, timeout=DEADLINE)
    return Session.start(two_states(tmp_path), model=model)


@pytest.mark.parametrize("kind", list(SERVERS))
def test_a_streamed_answer_ends_with_the_turn_deadline(tmp_path: Path, kind: str) -> None:
    with SERVERS[kind]() as server:
        session = start(tmp_path, server)
        chunks, turn, took = stream_turn(session)
    assert took < DEADLINE + MARGIN, f"{kind}: the turn took {took:.1f} s"
    assert turn.fallback and turn.reply == session.view.current_graph.fallback
    shown = "".join(c.text for c in chunks if isinstance(c, Delta))
    assert shown, "the half answer reached the stream before it stopped"
    assert chunks[-1] == Retracted(shown, failed=True)  # withdrawn: the fallback stands
    assert len(shown) <= 4_000  # never more than a reply may hold
    failed = [e for e in session.events() if e.kind == "llm_error"]
    assert len(failed) == 1 and failed[0].data["state"] == "a", failed
    assert len(server.bodies) == 1  # no time was left to ask again
    assert session.turns()[-1] == turn  # committed, the user's message kept
    assert session.transcript[-2:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": turn.reply},
    ]


def test_a_huge_stream_is_cut_off_with_a_clear_error(tmp_path: Path) -> None:
    with huge() as server:
        session = start(tmp_path, server)
        _, turn, _ = stream_turn(session)
    (failed,) = [e.data["error"] for e in session.events() if e.kind == "llm_error"]
    assert f"streamed more than {MAX_STREAMED_CHARS:,} characters" in failed
    assert json.dumps(turn.as_json()).count("All work") == 0
