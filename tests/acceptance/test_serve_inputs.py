"""What a client sends that no store can keep or no endpoint can mean is refused at the
edge with a 4xx and nothing logged as a failure, on SQLite and on PostgreSQL: a NUL in a
message, a key or an id, JSON nested 10,000 deep, an event number beyond 64 bits, an
upload the client abandons. The quota holds under concurrent creates, the rate counts
only the turns that run, and a key sent again with another text is refused."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.serving import GRAPHS, SCRIPT, Server, serving, store_of, tokens_file

pytestmark = pytest.mark.slow

ANN, CY = "ann-token-0123456789", "cy-token-01234567890"
TALK = str(GRAPHS / "talk.yaml")
QUOTA = 5
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp(f"inputs-{request.param}")
    store = store_of(request, folder)
    tokens = tokens_file(folder, {ANN: "ann", CY: "cy"})
    with serving(
        TALK, "--store", store, "--memory", "off", "--model", f"scripted:{SCRIPT}",
        "--tokens", str(tokens), "--turns-per-minute", "1000",
        "--sessions-per-user", str(QUOTA), folder=folder,
    ) as running:  # fmt: skip
        yield running


def refused(server: Server) -> None:
    """The server logged no failure (a 4xx is the client's, not an error)."""
    log = server.output()
    assert "Traceback" not in log and " 500 " not in log and " 503 " not in log, log


def test_what_no_store_can_keep_is_a_4xx_before_any_store_is_asked(server: Server) -> None:
    ann = server.client(ANN)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    nul, deep = "a\x00b", b'{"text": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    cases = [
        (ann.post(f"/v1/sessions/{sid}/messages", json={"text": nul}), 422, "invalid_field"),
        (
            ann.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "key": nul}),
            422,
            "invalid_field",
        ),
        (
            ann.post(f"/v1/sessions/{sid}/messages:stream", json={"text": nul}),
            422,
            "invalid_field",
        ),
        (
            ann.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "key": 2**64}),
            422,
            "invalid_field",
        ),
        (ann.post("/v1/sessions", json={"graph": "talk", "session_id": nul}), 422, "invalid_field"),
        (ann.post("/v1/sessions", json={"graph": nul}), 422, "invalid_field"),
        (
            ann.post("/v1/sessions", json={"graph": "talk", "session_id": ".."}),
            422,
            "invalid_field",
        ),
        (ann.post(f"/v1/sessions/{sid}/messages", content=deep, headers=JSON), 400, "invalid_json"),
        (ann.get(f"/v1/sessions/{sid}/events", params={"after": 2**64}), 422, "invalid_field"),
        (ann.get(f"/v1/sessions/{sid}/events", params={"limit": 0}), 422, "invalid_field"),
    ]
    for path in ("a%00b", "x" * 300):
        cases += [
            (ann.get(f"/v1/sessions/{path}"), 404, "not_found"),
            (ann.get(f"/v1/sessions/{path}/events"), 404, "not_found"),
            (ann.post(f"/v1/sessions/{path}/messages", json={"text": "hi"}), 404, "not_found"),
            (
                ann.post(f"/v1/sessions/{path}/messages:stream", json={"text": "hi"}),
                404,
                "not_found",
            ),
            (ann.post(f"/v1/sessions/{path}/undo"), 404, "not_found"),
            (ann.delete(f"/v1/sessions/{path}"), 404, "not_found"),
            (ann.delete(f"/v1/memories/{path}"), 404, "not_found"),
        ]
    for done, status, code in cases:
        assert (done.status_code, done.json()["error"]["code"]) == (status, code), done.text
    last = ann.get(f"/v1/sessions/{sid}/events", params={"after": 2**63 - 1})
    assert last.status_code == 200 and last.json()["events"] == []
    assert ann.get(f"/v1/sessions/{sid}").json()["turn"] == 0  # nothing of it was kept
    refused(server)


def test_a_key_sent_again_with_another_text_is_refused(server: Server) -> None:
    ann = server.client(ANN)
    sid = ann.post("/v1/sessions", json={"graph": "talk"}).json()["session"]
    url = f"/v1/sessions/{sid}/messages"
    first = ann.post(url, json={"text": "hello", "key": 7})
    assert first.status_code == 200, first.text
    for path in (url, f"{url}:stream"):
        other = ann.post(path, json={"text": "bye", "key": "7"})
        assert other.status_code == 422 and other.json()["error"]["code"] == "key_reused"
    again = ann.post(url, json={"text": "hello", "key": "7"})
    assert again.json()["replayed"] is True and again.json()["turn"] == first.json()["turn"]
    assert ann.get(f"/v1/sessions/{sid}").json()["turn"] == 1


def test_concurrent_creates_never_pass_the_quota(server: Server) -> None:
    cy = server.client(CY)
    with ThreadPoolExecutor(10) as pool:
        made = list(pool.map(lambda _: cy.post("/v1/sessions", json={"graph": "talk"}), range(10)))
    statuses = sorted(done.status_code for done in made)
    assert statuses == [201] * QUOTA + [403] * (10 - QUOTA), [d.text for d in made]
    assert len(cy.get("/v1/sessions").json()["sessions"]) == QUOTA
    assert {d.json()["error"]["code"] for d in made if d.status_code == 403} == {"session_quota"}


def abandon(url: str, body: bytes) -> None:
    """Send a request's headers and part of its body, then hang up."""
    where = urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=5) as sock:
        head = (
            f"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:{where.port}\r\n"
            f"Authorization: Bearer {ANN}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) + 1000}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)


def test_an_abandoned_upload_is_not_a_server_error(server: Server) -> None:
    for _ in range(20):
        abandon(server.url, b'{"graph": "ta')
    ann = server.client(ANN)
    assert ann.get("/v1/graphs").status_code == 200
    refused(server)


def test_the_rate_counts_the_turns_that_run(tmp_path: Path) -> None:
    with serving(
        TALK, "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SCRIPT}", "--turns-per-minute", "3", folder=tmp_path,
    ) as running:  # fmt: skip
        client = running.client()
        sid = client.post("/v1/sessions", json={"graph": "talk"}).json()["session"]  # 1
        for _ in range(5):
            missing = client.post("/v1/sessions/nobody/messages", json={"text": "hi"})
            assert missing.status_code == 404
            assert client.post("/v1/sessions/nobody/undo").status_code == 404
        url = f"/v1/sessions/{sid}/messages"
        assert client.post(url, json={"text": "a", "key": "k"}).status_code == 200  # 2
        for _ in range(5):
            assert client.post(url, json={"text": "a", "key": "k"}).json()["replayed"] is True
        assert client.post(url, json={"text": "b"}).status_code == 200  # 3
        limited = client.post(url, json={"text": "c"})
        assert limited.status_code == 429, limited.text
