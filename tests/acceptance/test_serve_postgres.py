"""Sessions on a real PostgreSQL shared by several `cgraph serve` processes and `cgraph run`:
the schema cgraph creates and guards, one writer per session across processes, and a
server killed mid-turn whose session another server finishes."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from cgraph.backends.store.postgres import PostgresStore
from tests.acceptance.test_memory_server import Server as ChromaServer
from tests.commands import CGRAPH, environment, ran
from tests.conftest import GRAPHS as EXAMPLES
from tests.serving import GRAPHS, SCRIPT, SLOW, Server, serving, start

pytestmark = pytest.mark.slow  # real PostgreSQL and server processes

TALK = GRAPHS / "talk.yaml"
ANN, BOB = "ann-token-0123456789", "bob-token-0123456789"


def serve_on(url: str, folder: Path, *extra: str, script: Path = SLOW) -> Server:
    return start(
        str(TALK), "--store", url, "--memory", "off", "--model", f"scripted:{script}", *extra,
        folder=folder,
    )  # fmt: skip


def user_messages(url: str, session: str) -> list[str]:
    store = PostgresStore(url, pool_size=1)
    try:
        return [e.data["text"] for e in store.events(session) if e.kind == "user_message"]
    finally:
        store.close()


def test_cgraph_creates_its_tables_and_refuses_a_later_layout(pg_url: str, tmp_path: Path) -> None:
    first = ran([str(CGRAPH), "store", "migrate", pg_url])
    assert (first.returncode, first.stdout) == (0, "session store layout created at version 4\n")
    again = ran([str(CGRAPH), "store", "migrate", pg_url])
    assert again.stdout == "session store layout already at version 4\n"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE cgraph_schema SET version = 99")
    refused = ran([str(CGRAPH), "serve", str(TALK), "--store", pg_url, "--memory", "off"])
    assert refused.returncode == 1
    assert "has layout version 99, newer than this cgraph's 4: upgrade cgraph" in refused.stderr


def test_embedded_memory_is_refused_with_a_database_store(pg_url: str) -> None:
    done = ran([str(CGRAPH), "serve", str(TALK), "--store", pg_url])
    assert done.returncode == 1 and "the embedded Chroma memory is one process's" in done.stderr


def test_a_session_moves_between_cgraph_run_and_cgraph_serve(pg_url: str, tmp_path: Path) -> None:
    run = [str(CGRAPH), "run", str(TALK), "--store", pg_url, "--session", "s1", "--jsonl"]
    run += ["--model", f"scripted:{SCRIPT}"]
    began = ran(run, ["one"], cwd=tmp_path, env=environment())
    assert began.returncode == 0, began.stderr
    assert json.loads(began.stdout)["turn"] == 1
    with serving(str(TALK), "--store", pg_url, "--memory", "off", folder=tmp_path) as running:
        client = running.client()
        assert [s["session"] for s in client.get("/v1/sessions").json()["sessions"]] == ["s1"]
        turn = client.post("/v1/sessions/s1/messages", json={"text": "two"}).json()
        assert (turn["turn"], turn["reply"]) == (2, "ok")
    went_on = ran(run, ["three"], cwd=tmp_path, env=environment())
    assert json.loads(went_on.stdout)["turn"] == 3, went_on.stderr
    assert user_messages(pg_url, "s1") == ["one", "two", "three"]


def test_two_processes_never_interleave_one_sessions_turns(pg_url: str, tmp_path: Path) -> None:
    # Leases of half a second, a turn of 1.5 s: renewed while the model is waited on.
    a, b = (
        serve_on(pg_url, tmp_path, "--lease", "0.5"),
        serve_on(pg_url, tmp_path, "--lease", "0.5"),
    )
    impatient = serve_on(pg_url, tmp_path, "--wait", "0.2")
    try:
        sid = a.client().post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        sends = [(a, "from a"), (b, "from b")]
        with ThreadPoolExecutor(3) as pool:
            done = [
                pool.submit(s.client().post, f"/v1/sessions/{sid}/messages", json={"text": t})
                for s, t in sends
            ]
            time.sleep(0.4)  # both are in: one runs its turn, the other waits for it
            busy = impatient.client().post(f"/v1/sessions/{sid}/messages", json={"text": "c"})
            answers = [f.result(timeout=30) for f in done]
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"
        assert sorted(r.json()["turn"] for r in answers) == [1, 2]
        assert sorted(user_messages(pg_url, sid)) == ["from a", "from b"]
        log = a.client().get(f"/v1/sessions/{sid}/events", params={"limit": 1000}).json()
        turns = [e["turn"] for e in log["events"]]
        assert turns == sorted(turns)  # every event of turn 1 before any of turn 2
    finally:
        for server in (a, b, impatient):
            server.stop(signal.SIGKILL)


def test_a_server_killed_mid_turn_loses_nothing_and_another_finishes_it(
    pg_url: str, tmp_path: Path
) -> None:
    a, b = serve_on(pg_url, tmp_path), serve_on(pg_url, tmp_path)
    try:
        sid = a.client().post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        lost: list[BaseException] = []

        def send() -> None:
            try:
                a.client().post(f"/v1/sessions/{sid}/messages", json={"text": "one", "key": 1})
            except httpx.HTTPError as error:
                lost.append(error)

        sending = threading.Thread(target=send)
        sending.start()
        wait_pending(b, sid, "one")  # inside the turn: its message is committed, its reply not
        a.stop(signal.SIGKILL)
        sending.join(10)
        assert lost, "the killed server's client must see its request fail"
        assert b.client().get(f"/v1/sessions/{sid}").json()["pending"] == "one"
        started = time.monotonic()
        again = b.client().post(f"/v1/sessions/{sid}/messages", json={"text": "one", "key": 1})
        assert time.monotonic() - started < 10
        assert again.status_code == 200
        assert again.json() | {"replayed": True} == again.json()  # the finished turn, once
        assert again.json()["turn"] == 1 and again.json()["reply"] == "ok"
        after = b.client().post(f"/v1/sessions/{sid}/messages", json={"text": "two"}).json()
        assert after["turn"] == 2
        assert user_messages(pg_url, sid) == ["one", "two"]
    finally:
        for server in (a, b):
            server.stop(signal.SIGKILL)


def wait_pending(server: Server, session: str, text: str) -> None:
    """Until the session's turn is under way: its message committed, its reply not (a
    fixed sleep misses that moment on a loaded machine)."""
    reader, deadline = server.client(), time.monotonic() + 20
    while reader.get(f"/v1/sessions/{session}").json()["pending"] != text:
        assert time.monotonic() < deadline, "the message was never committed"
        time.sleep(0.05)


def lease_of(url: str, session: str) -> tuple[str | None, float, int, float]:
    """(holder, expiry, fence, the database's clock now) of a session's lease."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT holder, expires, fence, extract(epoch FROM clock_timestamp())"
            " FROM cgraph_leases WHERE id = %s",
            (session,),
        ).fetchone()
    assert row is not None
    return row[0], float(row[1]), int(row[2]), float(row[3])


def test_a_holder_killed_mid_model_call_keeps_its_lease_until_it_lapses_and_no_longer(
    pg_url: str, tmp_path: Path
) -> None:
    a = serve_on(pg_url, tmp_path, "--lease", "3")
    b = serve_on(pg_url, tmp_path, "--lease", "3", "--wait", "10")
    try:
        sid = a.client().post("/v1/sessions", json={"graph": "talk"}).json()["session"]
        sending = threading.Thread(
            target=lambda: _quietly(
                a.client().post, f"/v1/sessions/{sid}/messages", json={"text": "one", "key": 1}
            )
        )
        sending.start()
        wait_pending(b, sid, "one")
        a.stop(signal.SIGKILL)  # waiting on the model: its message committed, no reply
        sending.join(10)
        holder, expires, fence, now = lease_of(pg_url, sid)
        assert holder is not None and expires > now + 0.5, "the killed holder's lease is in force"
        started = time.monotonic()
        again = b.client().post(f"/v1/sessions/{sid}/messages", json={"text": "one", "key": 1})
        waited = time.monotonic() - started
        # taken once it lapsed, then the turn finished (one more model call of 1.5 s)
        assert expires - now - 0.3 < waited < expires - now + 1.5 + 3, "taken when it lapsed"
        assert again.status_code == 200, again.text
        assert again.json()["replayed"] is True and again.json()["turn"] == 1
        assert again.json()["reply"] == "ok"
        after, _, fenced, _ = lease_of(pg_url, sid)
        assert after is None and fenced > fence  # the next holder's, let go
        assert (
            b.client().post(f"/v1/sessions/{sid}/messages", json={"text": "two"}).json()["turn"]
            == 2
        )
        assert user_messages(pg_url, sid) == ["one", "two"]  # the turn recovered once
    finally:
        for server in (a, b):
            server.stop(signal.SIGKILL)


def _quietly(call: Any, *args: Any, **kwargs: Any) -> None:
    """A request whose server is killed under it: its failure is the point."""
    with contextlib.suppress(httpx.HTTPError):
        call(*args, **kwargs)


def test_workers_share_the_sessions_and_keep_every_turn_once(pg_url: str, tmp_path: Path) -> None:
    running = serve_on(
        pg_url, tmp_path, "--workers", "2", "--turns-per-minute", "1000", script=SCRIPT
    )
    try:
        client = running.client()
        sids = [
            client.post("/v1/sessions", json={"graph": "talk"}).json()["session"] for _ in range(6)
        ]

        def talk(sid: str) -> list[int]:
            mine = running.client()
            return [
                mine.post(f"/v1/sessions/{sid}/messages", json={"text": f"m{n}"}).json()["turn"]
                for n in range(4)
            ]

        with ThreadPoolExecutor(6) as pool:
            assert list(pool.map(talk, sids)) == [[1, 2, 3, 4]] * 6
        for sid in sids:
            assert user_messages(pg_url, sid) == ["m0", "m1", "m2", "m3"]
    finally:
        running.stop(signal.SIGKILL)


def test_the_deployment_one_postgresql_one_chroma_server_two_workers(
    pg_url: str, tmp_path: Path
) -> None:
    """The README's sketch on one machine: the example check-in, the offline model, real
    embeddings and a real Chroma server; each user sees and forgets only their memories."""
    chroma = ChromaServer(tmp_path / "chroma")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{ANN} ann\n{BOB} bob\n")
    running = start(
        str(EXAMPLES / "medical_checkin.yaml"), "--store", pg_url, "--workers", "2",
        "--memory", f"chroma://127.0.0.1:{chroma.port}", "--tokens", str(tokens),
        folder=tmp_path,
    )  # fmt: skip
    try:
        ann, bob = running.client(ANN, timeout=120), running.client(BOB, timeout=120)
        sid = ann.post("/v1/sessions", json={"graph": "medical_checkin"}).json()["session"]
        said = "Hi, I am allergic to penicillin"
        turn = ann.post(f"/v1/sessions/{sid}/messages", json={"text": said}).json()
        assert turn["turn"] == 1 and turn["warnings"] == []
        mine = ann.get("/v1/memories").json()["memories"]
        assert [m["text"] for m in mine] == [said] and mine[0]["session_id"] == sid
        assert bob.get("/v1/memories").json() == {"memories": []}
        assert bob.delete(f"/v1/memories/{mine[0]['id']}").status_code == 404
        assert ann.delete(f"/v1/memories/{mine[0]['id']}").json() == {"deleted": 1}
        ann.post(f"/v1/sessions/{sid}/messages", json={"text": "Yes, I took them all today"})
        ann.post(f"/v1/sessions/{sid}/messages", json={"text": "I live in Leeds with my daughter"})
        kept = ann.get("/v1/memories").json()["memories"]
        assert {m["tier"] for m in kept} == {"task", "personal"}, kept
        # forgetting the session forgets what only it could recall, not what Ann told about
        # herself
        assert ann.delete(f"/v1/sessions/{sid}").status_code == 204
        assert ann.get("/v1/memories").json()["memories"] == [
            m for m in kept if m["tier"] != "task"
        ]
        assert ann.delete("/v1/memories").json()["deleted"] >= 1
        assert ann.get("/v1/memories").json() == {"memories": []}
        assert running.client().get("/readyz").json() == {"ready": True}
    finally:
        running.stop(signal.SIGKILL)
        chroma.stop()


def test_32_threads_on_a_pool_of_20_answer_every_first_turn(pg_url: str, tmp_path: Path) -> None:
    """More turns at once than the pool has connections, each opening a session another
    process created: a holder's own reads go through the connection it holds, never a
    second one (twenty holders waiting for a twenty-first stalled the process in 30-s
    cycles and answered 503)."""
    with serving(str(TALK), "--store", pg_url, "--memory", "off", folder=tmp_path) as creator:
        client = creator.client()
        sids = [
            client.post("/v1/sessions", json={"graph": "talk"}).json()["session"] for _ in range(32)
        ]
    running = serve_on(pg_url, tmp_path, "--threads", "32", "--turns-per-minute", "1000")
    try:

        def first(sid: str) -> int:
            with running.client(timeout=60) as mine:
                return mine.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}).status_code

        with ThreadPoolExecutor(32) as pool:
            assert list(pool.map(first, sids)) == [200] * 32
    finally:
        running.stop(signal.SIGKILL)


def test_turns_waiting_on_a_model_hold_no_connection_each(pg_url: str, tmp_path: Path) -> None:
    """48 turns waiting on a model at once, on one process: at most 12 PostgreSQL
    connections are the server's at any moment (its pool, the lease renewals' own),
    while the model sees more turns waiting than that."""
    from tests.acceptance.test_serve_model import ANSWER
    from tests.servers.stream import StreamServer
    from tests.unit.runtime.test_streaming import two_states

    sessions = 48
    with StreamServer(ANSWER, pieces=10, delay=0.15) as model:
        running = start(
            str(two_states(tmp_path)), "--store", pg_url, "--memory", "off",
            "--model", "openai/test-model", "--api-base", model.base,
            "--turns-per-minute", "100000", "--sessions-per-user", "1000", folder=tmp_path,
        )  # fmt: skip
        peak, done = 0, threading.Event()

        def count() -> None:
            nonlocal peak
            with psycopg.connect(pg_url, autocommit=True) as conn:
                while not done.is_set():
                    found = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    ).fetchone()
                    peak = max(peak, int(found[0]) if found else 0)
                    time.sleep(0.02)

        counting = threading.Thread(target=count)
        counting.start()
        try:
            with running.client(timeout=120) as client:
                sids = [
                    client.post("/v1/sessions", json={"graph": "g"}).json()["session"]
                    for _ in range(sessions)
                ]

            def send(sid: str) -> int:
                with running.client(timeout=120) as mine:
                    return mine.post(
                        f"/v1/sessions/{sid}/messages", json={"text": "hi"}
                    ).status_code

            with ThreadPoolExecutor(sessions) as pool:
                sent = list(pool.map(send, sids))
        finally:
            done.set()
            counting.join(10)
            running.stop(signal.SIGKILL)
    assert sent == [200] * sessions
    assert 0 < peak <= 12, f"{peak} connections"
    assert model.peak > 12  # more turns waited on the model at once than it held connections
