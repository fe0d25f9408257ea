"""What an operator sees of a real `cgraph serve` process: `/metrics` (read with
prometheus-client's own parser), the structured log (`--log-format json`) and the traces
it sends to an OTLP/HTTP receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.serving import GRAPHS, SCRIPT, SLOW, Server, serving

pytestmark = pytest.mark.slow  # a real server process

ANN = "ann-token-0123456789"
METRICS = "metrics-token-0123456789"


class Collector:
    """An OTLP/HTTP trace receiver: what `POST /v1/traces` brought, decoded from the real
    protobuf (`opentelemetry-proto`)."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sent = self.rfile.read(int(self.headers["content-length"]))
                assert self.path == "/v1/traces"
                assert self.headers["content-type"] == "application/x-protobuf"
                request = ExportTraceServiceRequest.FromString(sent)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans += [(resource.resource, s) for s in scope.spans]
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def named(self, name: str, trace_id: str, until: float = 10.0) -> list[Any]:
        """The spans of trace `trace_id` named `name`, once one has come."""
        deadline = time.monotonic() + until
        while time.monotonic() < deadline:
            found = [s for _, s in self.spans if s.name == name and s.trace_id.hex() == trace_id]
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"no span {name}: {[s.name for _, s in self.spans]}")


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    running = Collector()
    yield running
    running.http.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, collector: Collector) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("ops")
    tokens = folder / "tokens"
    tokens.write_text(f"{ANN} ann\n{BOB} bob\n")
    with serving(
        str(GRAPHS),
        *("--store", str(folder / "store"), "--model", f"scripted:{SCRIPT}"),
        *("--memory", "off", "--tokens", str(tokens), "--turns-per-minute", "1000"),
        *("--log-format", "json", "--metrics-token", METRICS),
        folder=folder,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        OTEL_SERVICE_NAME="cgraph-test",
        OTEL_BSP_SCHEDULE_DELAY="50",
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
    named = ann.post("/v1/sessions", json={"graph": "talk", "session_id": "named"})
    assert named.status_code == 201
    after = samples(server)

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert grew("cgraph_turns_total", graph="talk", outcome="stayed") == 2
    assert grew("cgraph_turns_total", graph="greet", outcome="stayed") == 1  # its opening
    assert grew("cgraph_turns_total", graph="broken", outcome="error") == 1
    assert grew("cgraph_turn_seconds_count", graph="talk") == 2
    assert grew("cgraph_sessions_started_total", graph="talk") == 2
    model = {"model": f"scripted:{SCRIPT}", "purpose": "turn"}
    assert grew("cgraph_model_calls_total", **model, result="ok") == 3
    assert grew("cgraph_model_calls_total", **model, result="error") == 1
    # 3 messages, the opening of `greet` (it speaks first) and the create that names its
    # session; the other creates, under ids the server mints, take no lease
    assert grew("cgraph_session_lock_wait_seconds_count") == 5
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


def test_traces_reach_an_otlp_receiver_continuing_the_clients_trace(
    server: Server, collector: Collector
) -> None:
    ann = server.client(ANN)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{trace_id}-00f067aa0ba902b7-01"
    said = ann.post(
        f"/v1/sessions/{sid}/messages", json={"text": "hi"}, headers={"traceparent": parent}
    )
    assert said.status_code == 200
    requests = collector.named("POST /v1/sessions/{id}/messages", trace_id)
    assert len(requests) == 1 and requests[0].parent_span_id.hex() == "00f067aa0ba902b7"
    (turn,) = collector.named("cgraph.turn", trace_id)
    assert turn.parent_span_id == requests[0].span_id
    attributes = {a.key: a.value for a in turn.attributes}
    assert attributes["cgraph.session"].string_value == sid
    assert attributes["cgraph.outcome"].string_value == "stayed"
    children = {s.name: s for _, s in collector.spans if s.parent_span_id == turn.span_id}
    assert set(children) == {"cgraph.step START", "cgraph.step talk"}
    step = {a.key: a.value for a in children["cgraph.step talk"].attributes}
    assert (step["cgraph.exit"].string_value, step["cgraph.reason"].string_value) == (
        "stay",
        "stays",
    )
    (call,) = [
        s for _, s in collector.spans if s.parent_span_id == children["cgraph.step talk"].span_id
    ]
    assert call.name == f"chat scripted:{SCRIPT}"
    said = {a.key for a in call.attributes}
    assert not said & {"gen_ai.prompt", "gen_ai.completion"}  # no --trace-content
    resource = next(r for r, s in collector.spans if s.span_id == turn.span_id)
    names = {a.key: a.value.string_value for a in resource.attributes}
    assert names["service.name"] == "cgraph-test"


def test_messages_reach_the_log_and_the_spans_only_when_asked(
    tmp_path: Path, collector: Collector
) -> None:
    """`--log-content` and `--trace-content`; `--no-metrics` turns `/metrics` off."""
    with serving(
        str(GRAPHS / "talk.yaml"),
        *("--store", str(tmp_path / "store"), "--model", f"scripted:{SCRIPT}"),
        *("--memory", "off", "--log-format", "json", "--log-content", "--trace-content"),
        "--no-metrics",
        folder=tmp_path,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
        OTEL_BSP_SCHEDULE_DELAY="50",
    ) as running:
        client = running.client()
        sid = client.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        trace_id = "5cf92f3577b34da6a3ce929d0e0e4737"
        parent = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
        url = f"/v1/sessions/{sid}/messages"
        said = client.post(url, json={"text": "a secret message"}, headers=parent)
        assert said.status_code == 200
        off = client.get("/metrics")
        assert (off.status_code, off.json()["error"]["code"]) == (404, "metrics_off")
        lines = log_lines(running, '"said": "a secret message"')
        (call,) = collector.named(f"chat scripted:{SCRIPT}", trace_id)
    turn = next(x for x in lines if x["message"] == "turn" and x.get("session") == sid)
    assert (turn["said"], turn["reply"]) == ("a secret message", "ok")
    attributes = {a.key: a.value.string_value for a in call.attributes}
    assert "a secret message" in attributes["gen_ai.prompt"]
    assert '"reply": "ok"' in attributes["gen_ai.completion"]


BOB = "bob-token-0123456789"


def chat_client(server: Server, token: str = ANN) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0)


def test_the_openai_client_talks_to_a_graph_turn_by_turn(server: Server) -> None:
    client = chat_client(server)
    assert [m.id for m in client.models.list()] == ["broken", "greet", "retract", "talk"]
    said = [{"role": "system", "content": "not replayed"}, {"role": "user", "content": "hi"}]
    first = client.chat.completions.with_raw_response.create(
        model="talk", messages=said, user="alice"
    )
    answer = first.parse()
    assert answer.object == "chat.completion" and answer.model == "talk"
    assert answer.choices[0].message.content == "ok"
    assert answer.choices[0].finish_reason == "stop"
    sid = first.headers["x-session-id"]
    assert (answer.model_extra or {})["cgraph"]["turn"] == 1
    said += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
    second = client.chat.completions.create(model="talk", messages=said, user="alice")
    assert (second.model_extra or {})["cgraph"] == {
        "session": sid,
        "turn": 2,
        "state": "talk",
        "completed": False,
    }
    again = client.chat.completions.create(model="talk", messages=said, user="alice")
    assert (again.model_extra or {})["cgraph"]["replayed"] is True  # sent again: no new turn
    view = server.client(ANN).get(f"/v1/sessions/{sid}").json()
    assert [m["content"] for m in view["transcript"]] == ["hi", "ok", "again", "ok"]
    opened = client.chat.completions.create(
        model="greet", messages=[{"role": "user", "content": "hey"}]
    )
    assert opened.choices[0].message.content == "hello there\n\nhello there"  # it speaks first


def test_a_streamed_chat_completion_comes_in_chunks(server: Server) -> None:
    client = chat_client(server)
    chunks = list(
        client.chat.completions.create(
            model="talk",
            messages=[{"role": "user", "content": "hi"}],
            user="streamer",
            stream=True,
        )
    )
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "ok"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    opened = client.chat.completions.create(
        model="greet", messages=[{"role": "user", "content": "hey"}], stream=True
    )
    said = "".join(c.choices[0].delta.content or "" for c in opened)
    assert said == "hello there\n\nhello there"  # the opening of a graph that speaks first


def test_a_session_named_by_x_session_id_is_the_conversation(server: Server) -> None:
    sid = server.client(ANN).post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    named = {"X-Session-Id": sid}
    said = [{"role": "user", "content": "hi"}]
    first = chat_client(server).chat.completions.create(
        model="talk", messages=said, extra_headers=named
    )
    assert (first.model_extra or {})["cgraph"]["session"] == sid
    said += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    second = chat_client(server).chat.completions.create(
        model="talk", messages=said, extra_headers=named
    )
    assert (second.model_extra or {})["cgraph"]["turn"] == 2
    assert second.usage is not None and second.usage.total_tokens > 0  # estimated: a script
    view = server.client(ANN).get(f"/v1/sessions/{sid}").json()
    assert [m["content"] for m in view["transcript"]] == ["hi", "ok", "more", "ok"]
    import openai

    with pytest.raises(openai.ConflictError) as other:
        chat_client(server).chat.completions.create(
            model="greet", messages=said[-1:], extra_headers=named
        )
    assert other.value.code == "graph_mismatch"


def test_two_users_and_two_tokens_have_their_own_conversations(server: Server) -> None:
    ann, bob = chat_client(server), chat_client(server, BOB)
    ids = set()
    for client, user in ((ann, "carol"), (ann, "dave"), (bob, "carol")):
        done = client.chat.completions.with_raw_response.create(
            model="talk", messages=[{"role": "user", "content": "hi"}], user=user
        )
        assert (done.parse().model_extra or {})["cgraph"]["turn"] == 1
        ids.add(done.headers["x-session-id"])
    assert len(ids) == 3
    mine = {s["session"] for s in server.client(BOB).get("/v1/sessions").json()["sessions"]}
    assert len(mine & ids) == 1


def test_the_openai_client_raises_its_own_errors(server: Server) -> None:
    import openai

    hi = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.NotFoundError) as wrong:
        chat_client(server).chat.completions.create(model="tlak", messages=hi)
    assert wrong.value.code == "model_not_found"
    assert "did you mean `talk`?" in wrong.value.message
    with pytest.raises(openai.AuthenticationError) as refused:
        chat_client(server, "not-a-token-at-all-0000").chat.completions.create(
            model="talk", messages=hi
        )
    assert refused.value.code == "invalid_api_key"
    with pytest.raises(openai.ConflictError) as other:
        history = [*hi, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "x"}]
        chat_client(server).chat.completions.create(model="talk", messages=history, user="new")
    assert other.value.code == "conversation_mismatch"
    with pytest.raises(openai.BadRequestError) as unnamed:
        chat_client(server).chat.completions.create(model="talk", messages=history)
    assert unnamed.value.code == "no_session"


def test_with_workers_every_scrape_counts_every_worker(tmp_path: Path) -> None:
    with serving(
        str(GRAPHS / "talk.yaml"),
        *("--store", str(tmp_path / "store"), "--model", f"scripted:{SCRIPT}"),
        *("--memory", "off", "--workers", "2", "--turns-per-minute", "1000"),
        folder=tmp_path,
    ) as running:
        with running.client() as client:
            for _ in range(6):  # new connections: the workers share them out
                sid = httpx.post(f"{running.url}/v1/sessions", json={"graph": "talk"}).json()
                said = client.post(f"/v1/sessions/{sid['session']}/messages", json={"text": "hi"})
                assert said.status_code == 200
        for _ in range(4):  # whichever worker answers
            found = {
                (s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(
                    httpx.get(f"{running.url}/metrics").text
                )
                for s in family.samples
            }
            assert found[("cgraph_turns_total", (("graph", "talk"), ("outcome", "stayed")))] == 6
            assert found[("cgraph_sessions_started_total", (("graph", "talk"),))] == 6
            assert found[("cgraph_turns_in_flight", ())] == 0
        assert running.stop() == 0  # SIGTERM: the workers stop (and their counts folder goes)


def test_a_busy_session_is_counted_with_its_lock_wait(tmp_path: Path) -> None:
    with serving(
        str(GRAPHS / "talk.yaml"),
        *("--store", str(tmp_path / "store"), "--model", f"scripted:{SLOW}"),
        *("--memory", "off", "--wait", "0.2"),
        folder=tmp_path,
    ) as running:
        sid = httpx.post(f"{running.url}/v1/sessions", json={"graph": "talk"}).json()["session"]
        url = f"{running.url}/v1/sessions/{sid}/messages"
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(httpx.post, url, json={"text": "one"}, timeout=30)
            time.sleep(0.5)  # the first turn holds the session (its model takes 1.5 s)
            second = pool.submit(httpx.post, url, json={"text": "two"}, timeout=30)
            statuses = sorted((first.result().status_code, second.result().status_code))
        assert statuses == [200, 409]
        found = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(httpx.get(f"{running.url}/metrics").text)
            for s in family.samples
        }
    assert found[("cgraph_session_busy_total", ())] == 1
    assert found[("cgraph_session_lock_wait_seconds_count", ())] == 2  # one, two
    assert found[("cgraph_session_lock_wait_seconds_sum", ())] >= 0.2  # the refused one waited
    route = (("method", "POST"), ("route", "/v1/sessions/{id}/messages"), ("status", "409"))
    assert found[("cgraph_http_requests_total", route)] == 1
    assert found[("cgraph_turns_total", (("graph", "talk"), ("outcome", "stayed")))] == 1
    # the default log format: one `key=value` line per turn and per request
    turns = [line for line in running.output().splitlines() if " cgraph.serve: turn " in line]
    assert len(turns) == 1 and f"session={sid}" in turns[0] and "outcome=stayed" in turns[0]
    busy = [line for line in running.output().splitlines() if "status=409" in line]
    assert len(busy) == 1 and "route=/v1/sessions/{id}/messages" in busy[0]
