"""A client-chosen session id is its user's own: two token users of a real `cgraph serve`
(SQLite, then PostgreSQL) both create session `a` and each gets their own, with every
endpoint, the chat protocol, the session list, webhook events and the log naming it `a`;
an id another user holds answers exactly as a free one (no 409 telling it exists), while
an id the user has already is still their 409. A server without tokens keeps its ids as
given, as `cgraph run --session` names them in the same store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cgraph.session import Sessions
from cgraph.wiring.stores import open_store
from tests.serving import GRAPHS, SCRIPT, Server, events, free_port, serving, store_of

pytestmark = pytest.mark.slow  # a real server process on each store

ANN, BOB = "ann-token-0123456789", "bob-token-0123456789"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    return store_of(request, tmp_path_factory.mktemp("ids"))


@pytest.fixture(scope="module")
def server(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve")
    tokens = folder / "tokens"
    tokens.write_text(f"{ANN} ann\n{BOB} bob\n")
    # nothing listens there: each event stays listed among the deliveries, as it was sent
    hook = f"http://127.0.0.1:{free_port()}/hook secret=env:HOOK_SECRET timeout=1 backoff=60"
    with serving(
        *(str(GRAPHS / "talk.yaml"), str(GRAPHS / "greet.yaml")),
        *("--store", store, "--model", f"scripted:{SCRIPT}", "--memory", "off"),
        *("--tokens", str(tokens), "--turns-per-minute", "1000", "--webhook", hook),
        folder=folder,
        HOOK_SECRET="whsec-0123456789abcdef",
    ) as running:
        yield running


def create(client: httpx.Client, sid: str) -> httpx.Response:
    return client.post("/v1/sessions", json={"graph": "talk", "session_id": sid})


def said(client: httpx.Client, sid: str) -> list[str]:
    view = client.get(f"/v1/sessions/{sid}")
    assert view.status_code == 200, view.text
    assert view.json()["session"] == sid
    return [m["content"] for m in view.json()["transcript"]]


def test_two_users_each_have_their_own_session_of_one_id(server: Server) -> None:
    ann, bob = server.client(ANN), server.client(BOB)
    for client in (ann, bob):
        made = create(client, "a")
        assert made.status_code == 201, made.text
        assert made.json()["session"] == "a"
    sent = ann.post("/v1/sessions/a/messages", json={"text": "mine", "key": "k"})
    assert sent.status_code == 200 and sent.json()["session"] == "a"
    streamed = events(bob.post("/v1/sessions/a/messages:stream", json={"text": "theirs"}).text)
    assert streamed[-1][0] == "turn" and streamed[-1][1]["session"] == "a"
    assert said(ann, "a") == ["mine", "ok"] and said(bob, "a") == ["theirs", "ok"]
    logged = ann.get("/v1/sessions/a/events", params={"limit": 1000}).json()["events"]
    assert {e["session"] for e in logged} == {"a"}
    assert [e["data"].get("text") for e in logged if e["kind"] == "user_message"] == ["mine"]

    greeted = bob.post("/v1/sessions", json={"graph": "greet", "session_id": "g"}).json()
    assert greeted["session"] == greeted["turn"]["session"] == "g"  # a graph that speaks first

    again = create(ann, "a")  # an id the user has already: their own conflict
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_exists"
    assert "`a`" in again.json()["error"]["message"] and "ann" not in again.text

    chat = {"model": "talk", "messages": [{"role": "user", "content": "theirs"}]}
    chat["messages"] += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    answered = bob.post("/v1/chat/completions", json=chat, headers={"x-session-id": "a"})
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-session-id"] == "a" == answered.json()["cgraph"]["session"]
    assert said(bob, "a") == ["theirs", "ok", "more", "ok"] and said(ann, "a") == ["mine", "ok"]

    undone = ann.post("/v1/sessions/a/undo").json()
    assert undone["undone"]["session"] == "a" and undone["turn"] == 0
    assert bob.delete("/v1/sessions/a").status_code == 204
    assert bob.get("/v1/sessions/a").status_code == 404 and said(ann, "a") == []


def test_an_id_another_user_holds_answers_as_a_free_one(server: Server) -> None:
    ann, bob = server.client(ANN), server.client(BOB)
    assert create(ann, "taken").status_code == 201
    ann.post("/v1/sessions/taken/messages", json={"text": "mine"})
    theirs, free = create(bob, "taken"), create(bob, "free")
    assert theirs.status_code == free.status_code == 201, theirs.text
    assert theirs.json() == {**free.json(), "session": "taken"}
    assert said(bob, "taken") == [] and said(ann, "taken") == ["mine", "ok"]


def test_the_list_shows_each_user_their_own_by_their_ids(server: Server) -> None:
    ann, bob = server.client(ANN), server.client(BOB)
    for client in (ann, bob):
        assert create(client, "listed").status_code == 201
    assert create(ann, "anns-only").status_code == 201
    listed = {
        name: {s["session"] for s in client.get("/v1/sessions").json()["sessions"]}
        for name, client in (("ann", ann), ("bob", bob))
    }
    assert {"listed", "anns-only"} <= listed["ann"]
    assert "listed" in listed["bob"] and "anns-only" not in listed["bob"]
    assert not any("/" in sid for sids in listed.values() for sid in sids)


def test_webhook_events_and_the_log_name_the_session_by_its_users_id(server: Server) -> None:
    ann, bob = server.client(ANN), server.client(BOB)
    for client, text in ((ann, "hi ann"), (bob, "hi bob")):
        assert create(client, "hooked").status_code == 201
        assert client.post("/v1/sessions/hooked/messages", json={"text": text}).status_code == 200
    told = {name: hooked(client) for name, client in (("ann", ann), ("bob", bob))}
    for user, found in told.items():
        assert {e["type"] for e in found} >= {"session.started", "turn.committed"}
        assert {(e["session"], e["user"]) for e in found} == {("hooked", user)}
        committed = next(e for e in found if e["type"] == "turn.committed")
        assert committed["data"]["session"] == "hooked"
        assert committed["data"]["user"] == f"hi {user}"
    assert not {e["id"] for e in told["ann"]} & {e["id"] for e in told["bob"]}
    logged = server.output()
    assert "session=hooked" in logged or '"session": "hooked"' in logged
    assert "ann/" not in logged and "bob/" not in logged


def hooked(client: httpx.Client, seconds: float = 30.0) -> list[dict[str, Any]]:
    """The events of `client`'s deliveries about session `hooked`, once its turn's are there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = client.get("/v1/webhooks/deliveries", params={"limit": 1000}).json()
        mine = [d["event"] for d in found["deliveries"] if "hooked" in d["event"]["session"]]
        if any(e["type"] == "turn.committed" for e in mine):
            return mine
        time.sleep(0.05)
    raise AssertionError(f"no turn.committed delivery in {seconds:g} s")


def test_without_tokens_a_session_is_stored_under_the_id_given(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with serving(
        str(GRAPHS / "talk.yaml"),
        *("--store", str(store), "--model", f"scripted:{SCRIPT}", "--memory", "off"),
        folder=tmp_path,
    ) as running:
        local = running.client()
        assert create(local, "kept").json()["session"] == "kept"
        assert local.post("/v1/sessions/kept/messages", json={"text": "hi"}).status_code == 200
        opened = open_store(str(store))
        try:
            info = Sessions(opened).info("kept", user_id="local")
        finally:
            opened.close()
        assert (info.id, info.turn) == ("kept", 1)
