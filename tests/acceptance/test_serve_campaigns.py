"""The campaigns against `cgraph serve` that found nothing, kept as tests so that they go on
finding nothing (the reliability page lists them with these counts), on SQLite and on
PostgreSQL: every bad `Authorization` header on every endpoint that needs a token is a
401 that changes nothing; an idempotency key sent by 20 clients at once runs one turn; and
a client that hangs up on a streamed turn leaves that turn committed once."""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serving import GRAPHS, SLOW, Server, serving, store_of, tokens_file

pytestmark = pytest.mark.slow  # real server processes

ANN, BOB = "ann-token-0123456789", "bob-token-0123456789"
CLIENTS = 20
HANG_UPS = 5


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """The slow model (1.5 s a turn): a client can hang up while its turn runs."""
    folder = tmp_path_factory.mktemp(f"campaigns-{request.param}")
    store = store_of(request, folder)
    tokens = tokens_file(folder, {ANN: "ann", BOB: "bob"})
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", store, "--memory", "off",
        "--model", f"scripted:{SLOW}", "--tokens", str(tokens),
        "--turns-per-minute", "1000000", "--sessions-per-user", "1000000", folder=folder,
    ) as running:  # fmt: skip
        yield running


def bad_headers() -> list[bytes | None]:
    """`Authorization` values that must not let anyone in (None: no header at all)."""
    basic = base64.b64encode(f"ann:{ANN}".encode()).decode()
    texts = [
        "",
        "Bearer",
        f"Bearer {ANN[1:]}",
        f"Basic {basic}",
        f"Token {ANN}",
        ANN,
        f"Bearer{ANN}",
        f"Bearer\t{ANN}",
        f"Bearer: {ANN}",
        f"Bearer {ANN[:-1]}",
        f"Bearer {ANN}0",
        f"Bearer {ANN[:-1]}8",
        f"Bearer {ANN.upper()}",
        f"Bearer {ANN[::-1]}",
        f"Bearer {ANN} {ANN}",
        f"Bearer {ANN},{BOB}",
        f'Bearer "{ANN}"',
        f"Bearer {base64.b64encode(ANN.encode()).decode()}",
        f"Bearer {hashlib.sha256(ANN.encode()).hexdigest()}",
        "Bearer ann",
        "Bearer ann-token",
        "Bearer null",
        f"Bearer {'A' * 8000}",
    ]
    return [None, *(t.encode() for t in texts), f"Bearer {ANN}é".encode(), b"Bearer \xff\xfe"]


def operations(server: Server) -> list[tuple[str, str]]:
    """Every (method, path) of the description that asks for a token, an id filled in."""
    paths = server.client(ANN).get("/openapi.json").json()["paths"]
    return [
        (method.upper(), path.replace("{id}", "x"))
        for path, described in paths.items()
        for method, operation in described.items()
        if operation.get("security") != []
    ]


def test_every_bad_authorization_header_is_refused_on_every_endpoint(server: Server) -> None:
    ann = server.client(ANN)
    before = ann.get("/v1/sessions").json()
    asked = operations(server)
    assert len(asked) >= 16  # the sessions, messages, memories, chat and webhook endpoints
    body = {"graph": "talk", "text": "hi", "model": "talk", "messages": []}
    refused = 0
    with httpx.Client(base_url=server.url, timeout=30) as anyone:
        for header in bad_headers():
            headers = {} if header is None else {"authorization": header}
            for method, path in asked:
                sent = body if method == "POST" else None
                done = anyone.request(method, path, json=sent, headers=headers)
                assert done.status_code == 401, (header, method, path, done.text)
                assert done.headers["www-authenticate"] == "Bearer"
                refused += 1
    assert refused == len(bad_headers()) * len(asked)  # 26 headers, every endpoint
    assert ann.get("/v1/sessions").json() == before  # nothing was created
    for good in (f"Bearer {ANN}", f"bearer {ANN}", f"BEARER  {ANN}"):  # the test can tell
        assert httpx.get(f"{server.url}/v1/graphs", headers={"authorization": good}).is_success


def test_one_key_from_many_clients_at_once_runs_one_turn(server: Server) -> None:
    ann = server.client(ANN)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    url = f"{server.url}/v1/sessions/{sid}/messages"
    auth = {"authorization": f"Bearer {ANN}"}

    def send(key: str) -> httpx.Response:
        return httpx.post(url, json={"text": f"hi {key}", "key": key}, headers=auth, timeout=180)

    with ThreadPoolExecutor(CLIENTS) as pool:
        same = list(pool.map(send, ["k"] * CLIENTS))
    assert [d.status_code for d in same] == [200] * CLIENTS, [d.text for d in same]
    assert sorted(bool(d.json().get("replayed")) for d in same) == [False] + [True] * 19
    assert {d.json()["turn"] for d in same} == {1}
    assert {d.json()["reply"] for d in same} == {"ok"}
    assert said(ann, sid) == ["hi k", "ok"]


def said(client: httpx.Client, sid: str) -> list[str]:
    return [m["content"] for m in client.get(f"/v1/sessions/{sid}").json()["transcript"]]


def hang_up(server: Server, sid: str, key: str) -> None:
    """Start a streamed turn and hang up once its 200 came, inside the model's 1.5 s."""
    with (
        server.client(ANN) as client,
        client.stream(
            "POST", f"/v1/sessions/{sid}/messages:stream", json={"text": key, "key": key}
        ) as started,
    ):
        assert started.status_code == 200, started.read()


def settled(client: httpx.Client, sid: str, turns: int, seconds: float = 60.0) -> dict[str, Any]:
    """The session's view once it holds `turns` turns and none is pending."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        view: dict[str, Any] = client.get(f"/v1/sessions/{sid}").json()
        if view["turn"] >= turns and view["pending"] is None:
            return view
        time.sleep(0.1)
    raise AssertionError(f"session {sid} did not reach turn {turns} in {seconds:g} s")


def test_a_client_that_hangs_up_on_a_stream_leaves_its_turn_committed_once(
    server: Server,
) -> None:
    ann = server.client(ANN, timeout=180)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    for n in range(HANG_UPS):
        hang_up(server, sid, f"m{n}")
        assert settled(ann, sid, n + 1)["turn"] == n + 1  # the turn went on without it
        again = ann.post(f"/v1/sessions/{sid}/messages", json={"text": f"m{n}", "key": f"m{n}"})
        assert again.json()["replayed"] is True and again.json()["turn"] == n + 1
    assert said(ann, sid) == [part for n in range(HANG_UPS) for part in (f"m{n}", "ok")]
    logged = ann.get(f"/v1/sessions/{sid}/events", params={"limit": 1000}).json()["events"]
    kinds = [e["kind"] for e in logged]
    assert kinds.count("user_message") == kinds.count("turn_completed") == HANG_UPS
    assert "Traceback" not in server.output()


def test_more_waiters_on_one_session_than_threads_do_not_stall_it(tmp_path: Path) -> None:
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "store"), "--memory", "off",
        "--model", f"scripted:{SLOW}", "--wait", "5", folder=tmp_path,
    ) as running:  # fmt: skip
        sid = running.client().post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        url = f"{running.url}/v1/sessions/{sid}/messages"
        began = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as pool:
            sent = list(
                pool.map(
                    lambda _: httpx.post(url, json={"text": "hi", "key": "k"}, timeout=60),
                    range(CLIENTS),
                )
            )
        took = time.monotonic() - began
    assert [d.status_code for d in sent] == [200] * CLIENTS  # waiters hold no thread
    assert took < 4.0  # one 1.5 s turn and 19 replays, not a wait of 5 s
