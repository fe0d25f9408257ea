"""`cgraph serve` with a language model: turns on the event loop, the model awaited.

A real `cgraph serve` against a local OpenAI-compatible server (`--model openai/NAME
--api-base URL`: the thin async client): more turns wait on the model at once than the
process has threads, replies stream, and litellm logs nothing per call.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.servers.stream import StreamServer
from tests.serving import start
from tests.unit.runtime.test_streaming import two_states

pytestmark = pytest.mark.slow
ANSWER = json.dumps({"exit": "stay", "reason": "greeting", "reply": "Hello from the model."})
SESSIONS = 8
THREADS = 2


def serving(tmp_path: Path, server: StreamServer, *more: str):  # type: ignore[no-untyped-def]
    args = ("--store", str(tmp_path / "store"), "--memory", "off", "--model", "openai/test-model")
    options = (*args, "--api-base", server.base, "--turns-per-minute", "1000", *more)
    return start(str(two_states(tmp_path)), *options, folder=tmp_path)


def test_more_turns_wait_on_the_model_than_the_process_has_threads(tmp_path: Path) -> None:
    with StreamServer(ANSWER, pieces=10, delay=0.1) as model:  # a second an answer
        running = serving(tmp_path, model, "--threads", str(THREADS))
        try:
            with running.client(timeout=180) as client:
                sids = [
                    client.post("/v1/sessions", json={"graph": "g"}).json() for _ in range(SESSIONS)
                ]
            assert all("session" in s for s in sids), sids

            def send(sid: str) -> tuple[int, str]:
                with running.client(timeout=180) as mine:
                    answer = mine.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"})
                    return answer.status_code, answer.json().get("reply", "")

            with ThreadPoolExecutor(SESSIONS) as pool:
                done = list(pool.map(send, [s["session"] for s in sids]))
        finally:
            running.stop()
        assert done == [(200, "Hello from the model.")] * SESSIONS
        # Two threads, and the model saw more turns than that waiting at once (all of them
        # on a quiet machine): none held a thread while it waited.
        assert model.peak > THREADS
        assert "litellm" not in running.output().lower()  # no line of litellm's per call


def test_a_reply_streams_from_the_model_through_the_server(tmp_path: Path) -> None:
    with StreamServer(ANSWER, pieces=10, delay=0.02) as model:
        running = serving(tmp_path, model)
        try:
            with running.client(timeout=180) as client:
                sid = client.post("/v1/sessions", json={"graph": "g"}).json()["session"]
                path = f"/v1/sessions/{sid}/messages:stream"
                with client.stream("POST", path, json={"text": "hi"}) as events:
                    kinds = [line[7:] for line in events.iter_lines() if line.startswith("event: ")]
                    assert events.status_code == 200
        finally:
            running.stop()
    assert kinds[-1] == "turn"
    assert kinds.count("delta") > 1  # in pieces, as the model wrote them
    assert model.bodies[-1]["stream"] is True and model.bodies[-1]["model"] == "test-model"


def test_chat_completions_and_openings_wait_on_the_model_without_threads(tmp_path: Path) -> None:
    # A graph that speaks first: each chat request creates its session (the opening, one
    # model call) and then runs its turn (another), all on the event loop.
    greet = Path(__file__).parent.parent / "fixtures" / "serve" / "graphs" / "greet.yaml"
    with StreamServer(ANSWER, pieces=10, delay=0.1) as model:
        args = ("--store", str(tmp_path / "store"), "--memory", "off", "--model", "openai/m")
        options = (*args, "--api-base", model.base, "--turns-per-minute", "1000")
        running = start(str(greet), *options, "--threads", str(THREADS), folder=tmp_path)
        try:

            def chat(number: int) -> tuple[int, str]:
                body = {"model": "greet", "messages": [{"role": "user", "content": "hi"}]}
                with running.client(timeout=180) as mine:
                    answer = mine.post("/v1/chat/completions", json={**body, "user": f"u{number}"})
                    said = answer.json()["choices"][0]["message"]["content"]
                    return answer.status_code, said

            with ThreadPoolExecutor(SESSIONS) as pool:
                done = list(pool.map(chat, range(SESSIONS)))
        finally:
            running.stop()
    both = "Hello from the model.\n\nHello from the model."  # the opening, then the reply
    assert done == [(200, both)] * SESSIONS
    assert model.peak > THREADS  # more model calls waited at once than there are threads
