"""What an operator sees of a real `cgraph serve` process: `/metrics` (read with
prometheus-client's own parser) and the structured log (`--log-format json`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.serving import GRAPHS, SCRIPT, Server, serving

pytestmark = pytest.mark.slow  # a real server process

ANN = "ann-token-0123456789"
METRICS = "metrics-token-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("ops")
    tokens = folder / "tokens"
    tokens.write_text(f"{ANN} ann\n")
    with serving(
        str(GRAPHS),
        *("--store", str(folder / "store"), "--model", f"scripted:{SCRIPT}"),
        *("--memory", "off", "--tokens", str(tokens), "--turns-per-minute", "1000"),
        *("--log-format", "json", "--metrics-token", METRICS),
        folder=folder,
    ) as running:
        yield running


def samples(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    done = httpx.get(f"{server.url}/metrics", headers={"authorization": f"Bearer {METRICS}"})
    assert done.status_code == 200 and done.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(done.text)
        for s in family.samples
    }


def log_lines(server: Server, until: str) -> list[dict[str, Any]]:
    """The server's JSON log lines, once one says `until` (uvicorn's lines are JSON too)."""
    deadline = time.monotonic() + 5
    while until not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    return [json.loads(line) for line in server.output().splitlines() if line.startswith("{")]


def test_metrics_count_turns_sessions_and_requests_behind_their_own_token(server: Server) -> None:
    ann = server.client(ANN)
    before = samples(server)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    for text in ("hi", "go"):
        assert ann.post(f"/v1/sessions/{sid}/messages", json={"text": text}).status_code == 200
    ann.post("/v1/sessions", json={"graph": "greet"})
    broken = ann.post("/v1/sessions", json={"graph": "broken"}).json()["session"]
    assert ann.post(f"/v1/sessions/{broken}/messages", json={"text": "x"}).status_code == 500
    after = samples(server)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("cgraph_turns_total", graph="talk", outcome="stayed") == 2
    assert grew("cgraph_turns_total", graph="greet", outcome="stayed") == 1  # its opening
    assert grew("cgraph_turns_total", graph="broken", outcome="error") == 1
    assert grew("cgraph_turn_seconds_count", graph="talk") == 2
    assert grew("cgraph_sessions_started_total", graph="talk") == 1
    assert grew("cgraph_model_calls_total", model=f"scripted:{SCRIPT}", result="ok") == 3
    assert grew("cgraph_model_calls_total", model=f"scripted:{SCRIPT}", result="error") == 1
    assert grew("cgraph_session_lock_wait_seconds_count") == 6  # 3 sessions, 3 messages
    route = "/v1/sessions/{id}/messages"
    assert grew("cgraph_http_requests_total", method="POST", route=route, status="200") == 2
    assert grew("cgraph_http_requests_total", method="POST", route=route, status="500") == 1
    assert after[("cgraph_turns_in_flight", ())] == 0
    for wrong in ({}, {"authorization": f"Bearer {ANN}"}):
        refused = httpx.get(f"{server.url}/metrics", headers=wrong)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"


def test_one_json_line_per_request_and_turn_with_the_error_id_the_client_got(
    server: Server,
) -> None:
    ann = server.client(ANN)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    said = ann.post(
        f"/v1/sessions/{sid}/messages",
        json={"text": "a secret message"},
        headers={"x-request-id": "req-42"},
    )
    assert said.headers["x-request-id"] == "req-42"
    broken = ann.post("/v1/sessions", json={"graph": "broken"}).json()["session"]
    failed = ann.post(f"/v1/sessions/{broken}/messages", json={"text": "x"})
    error_id = failed.json()["error"]["message"].split("error id ")[1].split()[0]
    lines = log_lines(server, f'"error_id": "{error_id}", "status": 500, "code"')
    turn = next(x for x in lines if x["message"] == "turn" and x.get("request_id") == "req-42")
    assert {k: turn[k] for k in ("level", "graph", "session", "user", "turn", "outcome")} == {
        "level": "info",
        "graph": "talk",
        "session": sid,
        "user": "ann",
        "turn": 1,
        "outcome": "stayed",
    }
    request = next(x for x in lines if x["message"] == "request" and x["request_id"] == "req-42")
    assert (request["status"], request["route"], request["session"]) == (
        200,
        "/v1/sessions/{id}/messages",
        sid,
    )
    assert request["seconds"] >= 0 and request["time"].endswith("Z")
    five = [x for x in lines if x.get("error_id") == error_id]
    assert {x["message"] for x in five} == {f"error {error_id}: 500 internal", "request"}
    assert any("Traceback" in x.get("traceback", "") for x in five)
    assert "a secret message" not in server.output()  # no message text unless asked
