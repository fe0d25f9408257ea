"""Memories on a server that serves several graphs (each graph opens its memory store, all
in one Chroma): forgetting them through one graph's store leaves no other store holding
a handle to the dropped collection, on the embedded Chroma, a Chroma server, and a Chroma
server shared by two workers on PostgreSQL; a session delete whose memory store fails
deletes nothing."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.test_memory_server import Server as ChromaServer
from tests.conftest import FIXTURES
from tests.serving import Server, start

pytestmark = pytest.mark.slow  # real server processes, real embeddings

GRAPHS = FIXTURES / "serve" / "remembering"
PERSONAL = "I am allergic to penicillin"
TASKS = {
    "notes": "We moved the meeting to Friday afternoon",
    "diary": "The garden needs watering every morning now",
}


def serve(folder: Path, *options: str) -> Server:
    return start(str(GRAPHS), "--turns-per-minute", "1000", *options, folder=folder)


def said(client: httpx.Client, graph: str, *texts: str) -> str:
    made = client.post("/v1/sessions", json={"graph": graph})
    assert made.status_code == 201, made.text
    sid = str(made.json()["session"])
    for text in texts:
        sent = client.post(f"/v1/sessions/{sid}/messages", json={"text": text})
        assert sent.status_code == 200, sent.text
    return sid


def memories(client: httpx.Client) -> list[dict[str, Any]]:
    got = client.get("/v1/memories")
    assert got.status_code == 200, got.text
    found: list[dict[str, Any]] = got.json()["memories"]
    return found


def fresh(server: Server) -> httpx.Client:
    """A client whose every request is a new connection (with workers, each may land on
    either process)."""
    return httpx.Client(base_url=server.url, timeout=120, headers={"connection": "close"})


def forgets_through_every_graph(server: Server, rounds: int = 3) -> None:
    """Memories kept through both graphs, all forgotten in one call that says how many,
    then kept, listed and forgotten again, round after round, with no call failing."""
    client = fresh(server)
    for _ in range(rounds):
        notes = said(client, "notes", PERSONAL, TASKS["notes"])
        diary = said(client, "diary", TASKS["diary"])
        kept = memories(client)
        assert sorted(m["text"] for m in kept) == sorted([PERSONAL, *TASKS.values()])
        assert {m["session_id"] for m in kept if m["tier"] == "task"} == {notes, diary}
        forgot = client.delete("/v1/memories")
        assert (forgot.status_code, forgot.json()) == (200, {"deleted": 3})
        for _ in range(5):  # the calls that answered 500 while a graph's handle was stale
            assert memories(client) == []
            assert client.delete("/v1/memories").json() == {"deleted": 0}
            assert client.delete("/v1/memories/no-such-memory").status_code == 404
        assert client.delete(f"/v1/sessions/{notes}").status_code == 204
        assert client.delete(f"/v1/sessions/{diary}").status_code == 204
    diary = said(client, "diary", TASKS["diary"])
    notes = said(client, "notes", TASKS["notes"])
    assert client.delete(f"/v1/sessions/{diary}").status_code == 204  # its task memory too
    assert [m["text"] for m in memories(client)] == [TASKS["notes"]]
    only = memories(client)[0]["id"]
    assert client.delete(f"/v1/memories/{only}").json() == {"deleted": 1}
    assert memories(client) == [] and client.get("/readyz").json() == {"ready": True}
    assert client.get(f"/v1/sessions/{notes}").status_code == 200


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    running = ChromaServer(tmp_path / "chroma")
    try:
        yield running
    finally:
        running.stop()


def test_two_graphs_on_the_embedded_chroma_forget_as_one(tmp_path: Path) -> None:
    server = serve(tmp_path, "--store", str(tmp_path / "store"))
    try:
        forgets_through_every_graph(server)
        assert " 500 " not in server.output() and "Traceback" not in server.output()
    finally:
        server.stop(signal.SIGKILL)


def test_two_graphs_on_a_chroma_server_forget_as_one(tmp_path: Path, chroma: ChromaServer) -> None:
    where = f"chroma://127.0.0.1:{chroma.port}"
    server = serve(tmp_path, "--store", str(tmp_path / "store"), "--memory", where)
    try:
        forgets_through_every_graph(server)
    finally:
        server.stop(signal.SIGKILL)


def test_two_workers_on_postgresql_and_a_chroma_server_forget_as_one(
    pg_url: str, tmp_path: Path, chroma: ChromaServer
) -> None:
    """Each worker holds its own handles: the collection one worker drops is looked up
    again by the other, whose next call finds it gone (or new), never fails."""
    where = f"chroma://127.0.0.1:{chroma.port}"
    server = serve(tmp_path, "--store", pg_url, "--memory", where, "--workers", "2")
    try:
        forgets_through_every_graph(server, rounds=6)
    finally:
        server.stop(signal.SIGKILL)


def test_a_session_delete_whose_memory_store_is_down_deletes_nothing(
    tmp_path: Path, chroma: ChromaServer
) -> None:
    where = f"chroma://127.0.0.1:{chroma.port}"
    server = serve(tmp_path, "--store", str(tmp_path / "store"), "--memory", where)
    try:
        client = fresh(server)
        sid = said(client, "notes", TASKS["notes"])
        chroma.stop()
        refused = client.delete(f"/v1/sessions/{sid}")
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "memory_unavailable"
        assert client.get(f"/v1/sessions/{sid}").json()["turn"] == 1  # the log is whole
        chroma.restart()
        assert [m["text"] for m in memories(client)] == [TASKS["notes"]]
        assert client.delete(f"/v1/sessions/{sid}").status_code == 204
        assert memories(client) == [] and client.get(f"/v1/sessions/{sid}").status_code == 404
    finally:
        server.stop(signal.SIGKILL)
