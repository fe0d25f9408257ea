"""`/v1/chat/completions` counts the tokens of the model calls a request made, read with
the real `openai` client from a real `cgraph serve` whose model is a local
OpenAI-compatible server (`tests.servers.chat`) that counts 10 prompt and 5 completion
tokens an answer: the counts are known, and compared exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import FIXTURES
from tests.servers.chat import OPENAI, ChatServer, serve
from tests.serving import Server, serving
from tests.unit.runtime.test_streaming import two_states

pytestmark = pytest.mark.slow  # real server processes

REPLY = "Hello from the model, and welcome."
ANSWERS = {"cgraph_action": {"exit": "stay", "reason": "greeting", "reply": REPLY}}
PROMPT, COMPLETION = 10, 5  # what the local server counts for every answer
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def model() -> Iterator[ChatServer]:
    with serve(OPENAI, by_schema=ANSWERS, piece=6) as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model: ChatServer) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("usage")
    with serving(
        str(two_states(folder)),
        *("--store", str(folder / "store"), "--memory", "off", "--model", "openai/local"),
        *("--api-base", model.base, "--turns-per-minute", "1000"),
        folder=folder,
    ) as running:
        yield running


def client(server: Server) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def counted(calls: int) -> dict[str, int]:
    return {
        "prompt_tokens": PROMPT * calls,
        "completion_tokens": COMPLETION * calls,
        "total_tokens": (PROMPT + COMPLETION) * calls,
    }


def usage_of(found: Any) -> dict[str, int]:
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {key: getattr(found, key) for key in keys}


def test_a_completion_counts_the_tokens_its_model_calls_used(
    server: Server, model: ChatServer
) -> None:
    before = len(model.bodies)
    answer = client(server).chat.completions.create(model="g", messages=HI, user="ann")
    made = len(model.bodies) - before
    assert answer.choices[0].message.content == REPLY
    assert made >= 1 and usage_of(answer.usage) == counted(made)
    again = client(server).chat.completions.create(model="g", messages=HI, user="ann")
    assert (again.model_extra or {})["cgraph"]["replayed"] is True
    assert len(model.bodies) == before + made  # sent again: no model call, and no tokens
    assert usage_of(again.usage) == counted(0)


def test_a_stream_ends_with_its_usage_when_asked(server: Server, model: ChatServer) -> None:
    before = len(model.bodies)
    chunks = list(
        client(server).chat.completions.create(
            model="g",
            messages=HI,
            user="bob",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    made = model.bodies[before:]
    assert made and all(b["stream"] is True for b in made)
    assert all(b["stream_options"] == {"include_usage": True} for b in made)
    *talk, last = chunks
    assert last.choices == [] and usage_of(last.usage) == counted(len(made))
    assert all(c.usage is None and len(c.choices) == 1 for c in talk)
    assert "".join(c.choices[0].delta.content or "" for c in talk) == REPLY
    assert talk[-1].choices[0].finish_reason == "stop"


def test_a_stream_not_asked_for_its_usage_sends_none(server: Server) -> None:
    chunks = list(
        client(server).chat.completions.create(model="g", messages=HI, user="carol", stream=True)
    )
    assert all(c.usage is None and len(c.choices) == 1 for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_memory_extraction_is_counted_in_the_usage_and_in_its_own_series(
    tmp_path: Path,
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    remembered = {"memories": [{"tier": "personal", "text": "I am allergic to penicillin"}]}
    answers = {**ANSWERS, "cgraph_extract": remembered}
    with (
        serve(OPENAI, by_schema=answers) as model,
        serving(
            str(FIXTURES / "serve" / "remembering" / "notes.yaml"),
            *("--store", str(tmp_path / "store"), "--model", "openai/local"),
            *("--api-base", model.base, "--turns-per-minute", "1000"),
            folder=tmp_path,
        ) as running,
    ):
        said = [{"role": "user", "content": "I am allergic to penicillin"}]
        answer = client(running).chat.completions.create(model="notes", messages=said, user="u")
        kinds = [b["response_format"]["json_schema"]["name"] for b in model.bodies]
        assert kinds == ["cgraph_action", "cgraph_extract"]  # the turn, then its memories
        assert usage_of(answer.usage) == counted(2)
        assert [m["text"] for m in running.client().get("/v1/memories").json()["memories"]] == [
            "I am allergic to penicillin"
        ]
        scraped = httpx.get(f"{running.url}/metrics").text
    samples = [s for family in text_string_to_metric_families(scraped) for s in family.samples]
    calls = {s.labels["purpose"]: s.value for s in samples if s.name == "cgraph_model_calls_total"}
    assert calls == {"turn": 1, "extraction": 1}
    tokens = {
        (s.labels["purpose"], s.labels["kind"]): s.value
        for s in samples
        if s.name == "cgraph_model_tokens_total"
    }
    assert tokens == {  # as the provider counted them, not estimated
        ("turn", "prompt"): PROMPT,
        ("turn", "completion"): COMPLETION,
        ("extraction", "prompt"): PROMPT,
        ("extraction", "completion"): COMPLETION,
    }
