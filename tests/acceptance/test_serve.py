"""`cgraph serve` as a client meets it: a real server process on a free port (SQLite store,
the instant scripted model), driven over HTTP."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.commands import CGRAPH, ran
from tests.conftest import GRAPHS as EXAMPLES
from tests.serving import GRAPHS, SCRIPT, SERVE, SLOW, Server, events, serving, start

pytestmark = pytest.mark.slow  # each test talks to a real server process

ANN, BOB = "ann-token-0123456789", "bob-token-0123456789"
MISSING = "no-such-session"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve")
    tokens = folder / "tokens"
    tokens.write_text(f"# token user\n{ANN} ann\n{BOB} bob\n")
    with serving(
        str(GRAPHS),
        *("--store", str(folder / "store"), "--model", f"scripted:{SCRIPT}"),
        *("--memory", "off", "--tokens", str(tokens), "--turns-per-minute", "1000"),
        folder=folder,
    ) as running:
        yield running


def created(client: httpx.Client, graph: str = "talk") -> dict[str, Any]:
    done = client.post("/v1/sessions", json={"graph": graph})
    assert done.status_code == 201, done.text
    found: dict[str, Any] = done.json()
    return found


def test_a_conversation_over_http(server: Server) -> None:
    ann = server.client(ANN)
    listed = {g["name"]: g for g in ann.get("/v1/graphs").json()["graphs"]}
    assert set(listed) == {"talk", "greet", "broken", "retract"}
    assert listed["talk"]["lint"] == "clean" and listed["talk"]["schema_version"] == 1
    greeting = created(ann, "greet")
    assert greeting["turn"]["user"] is None and greeting["turn"]["reply"] == "hello there"
    sid = created(ann)["session"]
    first = ann.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "key": "k1"}).json()
    assert (first["turn"], first["user"], first["reply"], first["session"]) == (1, "hi", "ok", sid)
    again = ann.post(f"/v1/sessions/{sid}/messages", json={"text": "hi", "key": "k1"})
    assert again.status_code == 200 and again.json() == {**first, "replayed": True}
    streamed = events(ann.post(f"/v1/sessions/{sid}/messages:stream", json={"text": "go"}).text)
    assert [name for name, _ in streamed] == ["delta", "turn"]
    assert streamed[0][1] == {"text": "ok"} and streamed[-1][1]["turn"] == 2
    view = ann.get(f"/v1/sessions/{sid}").json()
    assert (view["turn"], view["state"], view["completed"], view["pending"]) == (
        2,
        "talk",
        False,
        None,
    )
    assert [m["content"] for m in view["transcript"]] == ["hi", "ok", "go", "ok"]
    page = ann.get(f"/v1/sessions/{sid}/events", params={"limit": 3}).json()
    assert [e["seq"] for e in page["events"]] == [0, 1, 2] and page["next"] == 2
    rest = ann.get(f"/v1/sessions/{sid}/events", params={"after": 2, "limit": 1000}).json()
    assert rest["events"][0]["seq"] == 3 and rest["events"][-1]["kind"] == "turn_completed"
    undone = ann.post(f"/v1/sessions/{sid}/undo").json()
    assert undone["undone"]["turn"] == 2 and undone["turn"] == 1
    mine = {s["session"] for s in ann.get("/v1/sessions").json()["sessions"]}
    assert mine == {sid, greeting["session"]}
    assert server.client(BOB).get("/v1/sessions").json() == {"sessions": []}
    assert ann.delete(f"/v1/sessions/{sid}").status_code == 204
    assert ann.get(f"/v1/sessions/{sid}").status_code == 404
    assert ann.get(f"/v1/sessions/{sid}/events").status_code == 404


def test_a_streamed_reply_that_is_refused_is_retracted_then_replaced(server: Server) -> None:
    ann = server.client(ANN)
    sid = created(ann, "retract")["session"]
    said = events(ann.post(f"/v1/sessions/{sid}/messages:stream", json={"text": "hi"}).text)
    names = [name for name, _ in said]
    assert names.index("retracted") < names.index("turn") == len(names) - 1
    shown = "".join(d["text"] for n, d in said[: names.index("retracted")] if n == "delta")
    assert shown == "a reply that is refused" == said[names.index("retracted")][1]["shown"]
    after = "".join(d["text"] for n, d in said[names.index("retracted") :] if n == "delta")
    assert after == "the right reply" == said[-1][1]["reply"]


def test_another_users_session_answers_as_a_missing_one_on_every_endpoint(server: Server) -> None:
    ann, bob = server.client(ANN), server.client(BOB)
    sid = created(ann)["session"]
    ann.post(f"/v1/sessions/{sid}/messages", json={"text": "mine"})
    routes = ann.get("/openapi.json").json()["paths"]
    tried = 0
    for path, operations in routes.items():
        if "{id}" not in path or not path.startswith("/v1/sessions"):
            continue
        for method in operations:
            body = {"text": "hello"} if method == "post" else None
            theirs = bob.request(method, path.replace("{id}", sid), json=body)
            missing = bob.request(method, path.replace("{id}", MISSING), json=body)
            assert theirs.status_code == missing.status_code == 404, (method, path)
            assert theirs.text.replace(sid, MISSING) == missing.text
            tried += 1
    assert tried == 6
    assert bob.delete("/v1/memories/some-memory-of-ann").status_code == 404
    view = ann.get(f"/v1/sessions/{sid}").json()
    assert view["turn"] == 1 and [m["content"] for m in view["transcript"]] == ["mine", "ok"]


def test_every_endpoint_needs_a_token_but_the_health_checks(server: Server) -> None:
    routes = server.client(ANN).get("/openapi.json").json()["paths"]
    anonymous, wrong = server.client(), server.client("not-a-token-at-all-0000")
    public = {"/healthz": 200, "/readyz": 200, "/metrics": 200, "/": 307}
    for path, operations in routes.items():
        for method, operation in operations.items():
            url = path.replace("{id}", "x")
            assert (operation.get("security") == []) == (path in public), path
            for client in (anonymous, wrong):
                done = client.request(method, url)
                if path in public:
                    assert done.status_code == public[path], path
                else:
                    assert done.status_code == 401, (method, path)
                    code = "invalid_api_key" if path.startswith("/v1/chat") else "unauthorized"
                    assert done.json()["error"]["code"] == code
                    assert done.headers["www-authenticate"] == "Bearer"


def test_bad_input_is_refused_with_a_json_error_and_nothing_stored(server: Server) -> None:
    ann = server.client(ANN)
    sid = created(ann)["session"]
    url = f"/v1/sessions/{sid}/messages"
    before = len(ann.get(f"/v1/sessions/{sid}/events").json()["events"])
    ann.headers["content-type"] = "application/json"
    refused = [
        (ann.post(url, content=b'{"text": "' + b"a" * 65_536 + b'"}'), 413, "body_too_large"),
        (ann.post(url, json={"text": "a" * 8_001}), 422, "message_too_long"),
        (ann.post(url, content=b'{"text": "caf\xe9"}'), 400, "invalid_utf8"),
        (ann.post(url, content=b'{"text": "\\ud800"}'), 400, "invalid_utf8"),
        (ann.post(url, content=b"not json"), 400, "invalid_json"),
        (ann.post(url, json={"text": 5}), 422, "invalid_field"),
        (ann.post(url, json=["text"]), 400, "invalid_json"),
        (ann.post("/v1/sessions", json={"graph": "nope"}), 422, "unknown_graph"),
        (
            ann.post("/v1/sessions", json={"graph": "talk", "session_id": "a/b"}),
            422,
            "invalid_field",
        ),
        (ann.get(f"/v1/sessions/{sid}/events", params={"limit": "x"}), 422, "invalid_field"),
        (ann.get("/v1/nowhere"), 404, "no_route"),
    ]
    for done, status, code in refused:
        assert (done.status_code, done.json()["error"]["code"]) == (status, code), done.text
        assert set(done.json()["error"]) == {"code", "message"}
    assert len(ann.get(f"/v1/sessions/{sid}/events").json()["events"]) == before
    longest = ann.post(url, json={"text": "é" * 8_000})
    assert longest.status_code == 200 and longest.json()["user"] == "é" * 8_000


def test_an_operator_is_told_what_is_missing_meant_or_allowed(server: Server) -> None:
    ann = server.client(ANN)
    missing = ann.post("/v1/sessions", json={}).json()["error"]
    assert missing == {
        "code": "missing_field",
        "message": "`graph` is missing; the body takes `graph` (required), `session_id`",
    }
    sid = created(ann)["session"]
    no_text = ann.post(f"/v1/sessions/{sid}/messages", json={"key": "k"}).json()["error"]
    assert no_text["message"] == "`text` is missing; the body takes `text` (required), `key`"
    typo = ann.post("/v1/sessions", json={"graph": "tlak"}).json()["error"]["message"]
    assert typo == "no graph `tlak` here; did you mean `talk`? served: broken, greet, retract, talk"
    for method, path, allowed in (
        ("GET", f"/v1/sessions/{sid}/messages", "POST"),
        ("PUT", f"/v1/sessions/{sid}", "DELETE, GET, HEAD"),
        ("DELETE", "/v1/graphs", "GET, HEAD"),
    ):
        done = ann.request(method, path)
        assert done.status_code == 405 and done.json()["error"]["code"] == "method_not_allowed"
        assert ", ".join(sorted(done.headers["allow"].split(", "))) == allowed, path
        assert f"this endpoint takes {done.headers['allow']}" in done.json()["error"]["message"]
    home = server.client().get("/")
    assert (home.status_code, home.headers["location"]) == (307, "/openapi.json")


def test_a_path_with_a_slash_more_is_no_endpoint_and_no_redirect(server: Server) -> None:
    """No 307 to a `Location` built from the request's `Host`, before or after the token."""
    rebound = {"host": "rebound.example"}
    for path in ("/v1/graphs/", "/v1/sessions/", "/healthz/", "/metrics/"):
        mine = server.client(ANN).get(path, headers=rebound)
        for done in (mine, server.client().get(path, headers=rebound)):
            assert done.status_code in (401, 404), (path, done.status_code, done.headers)
            assert "location" not in done.headers, path
        assert (mine.status_code, mine.json()["error"]["code"]) == (404, "no_route"), path


def test_a_busy_port_is_said_alone(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["serve", str(GRAPHS), "--store", str(tmp_path), "--port", str(port)]
        done = ran([str(CGRAPH), *args])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use (another server "
        "on that port? stop it, or give --port N)"
    ]


def test_a_server_failure_shows_an_error_id_that_the_log_has_and_no_traceback(
    server: Server,
) -> None:
    ann = server.client(ANN)
    sid = created(ann, "broken")["session"]
    done = ann.post(f"/v1/sessions/{sid}/messages", json={"text": "hello"})
    assert done.status_code == 500
    error = done.json()["error"]
    assert error["code"] == "internal" and "Traceback" not in done.text
    error_id = error["message"].split("error id ")[1].split()[0]
    deadline = time.monotonic() + 5
    while f"error {error_id}" not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    log = server.output()
    assert f"error {error_id}: 500 internal" in log and "Traceback" in log
    assert "no answer left" in log  # the cause is in the log, not in the answer


def test_the_openapi_description_lists_every_endpoint(server: Server) -> None:
    paths = server.client(ANN).get("/openapi.json").json()["paths"]
    assert set(paths) == {
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/sessions/{id}/messages",
        "/v1/sessions/{id}/messages:stream",
        "/v1/sessions/{id}/events",
        "/v1/sessions/{id}/undo",
        "/v1/memories",
        "/v1/memories/{id}",
        "/v1/graphs",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/metrics",
        "/v1/models",
        "/v1/chat/completions",
        "/v1/webhooks/deliveries",
        "/",
    }
    assert paths["/v1/sessions/{id}/messages"]["post"]["requestBody"]["content"]


def test_turns_per_minute_and_sessions_per_user_are_limited(tmp_path: Path) -> None:
    options = ("--turns-per-minute", "3", "--sessions-per-user", "2", "--memory", "off")
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), *options,
        "--model", f"scripted:{SCRIPT}", folder=tmp_path,
    ) as running:  # fmt: skip
        client = running.client()
        sid = created(client)["session"]
        created(client)
        quota = client.post("/v1/sessions", json={"graph": "talk"})
        assert quota.status_code == 403 and quota.json()["error"]["code"] == "session_quota"
        assert client.post(f"/v1/sessions/{sid}/messages", json={"text": "a"}).status_code == 200
        limited = client.post(f"/v1/sessions/{sid}/messages", json={"text": "b"})
        assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) > 0
        assert client.get(f"/v1/sessions/{sid}").json()["turn"] == 1


def serve_command(*args: str) -> tuple[int, str]:
    done = ran([str(CGRAPH), "serve", *args], timeout=120)
    return done.returncode, done.stderr


def test_a_server_that_must_not_start_says_why(tmp_path: Path) -> None:
    code, said = serve_command(str(GRAPHS), "--host", "0.0.0.0", "--store", str(tmp_path))
    assert code == 1 and "without --tokens would let anyone on the network in" in said
    code, said = serve_command(str(SERVE / "invalid"), "--store", str(tmp_path))
    assert code == 1 and "bad.yaml:7:3 error missing-key" in said
    code, said = serve_command(str(GRAPHS), "--workers", "2", "--store", str(tmp_path))
    assert code == 1 and "the embedded Chroma memory is one process's" in said
    tokens = tmp_path / "tokens"
    tokens.write_text("short ann\n")
    code, said = serve_command(str(GRAPHS), "--tokens", str(tokens), "--store", str(tmp_path))
    assert code == 1 and "tokens:1: a token must have at least 16 characters" in said


def test_sigterm_lets_the_turn_in_flight_finish_and_refuses_new_requests(tmp_path: Path) -> None:
    running = start(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SLOW}", folder=tmp_path,
    )  # fmt: skip
    try:
        client = running.client()
        sid = created(client)["session"]
        answers: list[httpx.Response] = []
        sending = threading.Thread(
            target=lambda: answers.append(
                client.post(f"/v1/sessions/{sid}/messages", json={"text": "slow"})
            )
        )
        sending.start()
        time.sleep(0.5)  # inside the turn (the model takes 1.5 s)
        running.process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        refused = running.client().get("/v1/graphs")
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "draining"
        sending.join(10)
        assert answers and answers[0].status_code == 200 and answers[0].json()["turn"] == 1
        running.process.wait(15)
    finally:
        running.stop(signal.SIGKILL)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def test_a_message_sent_while_a_graph_speaks_first_waits_for_its_opening(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    """A session is listed (and announced) before the opening turn of a graph that speaks
    first is done: a message sent to it then waits for that turn, and is the next."""
    script = tmp_path / "opening.yaml"
    script.write_text(
        "hello:\n  - {sleep: 1.5, then: {exit: stay, reason: stays, reply: hello there}}\n"
        "  - {exit: stay, reason: stays, reply: ok}\n"
    )
    store = str(tmp_path / "s") if kind == "sqlite" else request.getfixturevalue("pg_url")
    with serving(
        str(GRAPHS / "greet.yaml"), "--store", store, "--memory", "off",
        "--model", f"scripted:{script}", folder=tmp_path,
    ) as running, ThreadPoolExecutor(1) as pool:  # fmt: skip
        creating = pool.submit(running.client().post, "/v1/sessions", json={"graph": "greet"})
        client, deadline = running.client(), time.monotonic() + 10
        while not (listed := client.get("/v1/sessions").json()["sessions"]):
            assert time.monotonic() < deadline and not creating.done()
            time.sleep(0.05)
        sid = listed[0]["session"]
        said = client.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}, timeout=30)
        made = creating.result(timeout=30)
        assert made.status_code == 201 and made.json()["turn"]["reply"] == "hello there"
        assert said.status_code == 200, said.text
        assert (said.json()["turn"], said.json()["reply"]) == (2, "ok")  # after the opening
        view = client.get(f"/v1/sessions/{sid}").json()
        assert [m["content"] for m in view["transcript"]] == ["hello there", "hi", "ok"]


def test_a_create_naming_its_session_waits_for_that_sessions_lease(tmp_path: Path) -> None:
    """A create that names its session takes the session's lease like any write: while
    another holder has it (here the library, in this process), the create waits for it,
    rather than being refused as a writer without the lease."""
    from cgraph.backends.store.sqlite import SQLiteStore

    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SCRIPT}", folder=tmp_path,
    ) as running, ThreadPoolExecutor(1) as pool:  # fmt: skip
        client = running.client()
        assert client.get("/v1/sessions").json() == {"sessions": []}
        store = SQLiteStore(tmp_path / "s" / "sessions.sqlite")
        try:
            with store.hold("y", wait=5, ttl=30):
                body = {"graph": "talk", "session_id": "y"}
                creating = pool.submit(client.post, "/v1/sessions", json=body, timeout=30)
                time.sleep(0.5)
                assert not creating.done()  # it waits for the lease
            made = creating.result(timeout=30)
        finally:
            store.close()
        assert made.status_code == 201 and made.json()["session"] == "y", made.text


def test_beyond_the_cap_on_requests_in_flight_a_message_gets_503_and_retry_after(
    tmp_path: Path,
) -> None:
    running = start(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SLOW}", "--max-in-flight", "1", folder=tmp_path,
    )  # fmt: skip
    try:
        client = running.client()
        first, second = created(client)["session"], created(client)["session"]
        answers: list[httpx.Response] = []
        sending = threading.Thread(
            target=lambda: answers.append(
                client.post(f"/v1/sessions/{first}/messages", json={"text": "slow"})
            )
        )
        sending.start()
        deadline = time.monotonic() + 20
        while client.get(f"/v1/sessions/{first}").json()["pending"] != "slow":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        refused = running.client().post(f"/v1/sessions/{second}/messages", json={"text": "x"})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "overloaded"
        sending.join(15)
        assert answers and answers[0].status_code == 200
        again = running.client().post(f"/v1/sessions/{second}/messages", json={"text": "x"})
        assert again.status_code == 200  # the turn done, the next one is carried
    finally:
        running.stop(signal.SIGKILL)


def test_reads_in_flight_never_count_against_the_cap_on_writes(tmp_path: Path) -> None:
    """Under `--max-in-flight 1`, clients polling a session while another sends must not
    push the messages out: the cap bounds the turns a process carries, not its reads."""
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SCRIPT}", "--max-in-flight", "1", folder=tmp_path,
    ) as running:  # fmt: skip
        client = running.client()
        sid = created(client)["session"]
        polling = threading.Event()
        polled: list[int] = []

        def poll() -> None:
            with running.client() as reader:
                while not polling.is_set():
                    polled.append(reader.get(f"/v1/sessions/{sid}").status_code)

        readers = [threading.Thread(target=poll) for _ in range(4)]
        for reader in readers:
            reader.start()
        try:
            deadline = time.monotonic() + 20
            while len(polled) < len(readers):  # the reads are going on before the first send
                assert time.monotonic() < deadline
                time.sleep(0.01)
            before = len(polled)
            sent = [
                client.post(f"/v1/sessions/{sid}/messages", json={"text": f"hi {n}"}).status_code
                for n in range(20)
            ]
            during = len(polled) - before
        finally:
            polling.set()
            for reader in readers:
                reader.join(10)
        assert sent == [200] * 20
        assert set(polled) == {200} and during > 0


def test_a_new_user_serves_the_example_graphs_and_chats(tmp_path: Path) -> None:
    """The README's first minute: `cgraph serve graphs/`, then curl."""
    with serving(str(EXAMPLES), "--store", str(tmp_path / "store"), folder=tmp_path) as running:
        client = running.client(timeout=120)
        sid = created(client, "medical_checkin")["session"]
        turn = client.post(f"/v1/sessions/{sid}/messages", json={"text": "Hi, I'm ready"}).json()
        assert turn["state"] == "medication_adherence_check"
        assert turn["reply"].startswith("Did you take all of your prescribed heart medications")
        assert client.get("/readyz").json() == {"ready": True}
        assert "no --tokens: one user `local`, reachable from this machine only" in running.output()


def _first(lines: list[str], text: str) -> int:
    return next(n for n, line in enumerate(lines) if text in line)


def test_each_graph_is_prepared_before_the_first_request_and_one_that_cannot_run_is_said(
    tmp_path: Path,
) -> None:
    # The offline chooser's embedding model is loaded before the server answers at all.
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "a"), "--memory", "off",
        folder=tmp_path,
    ) as ready:  # fmt: skip
        assert ready.client().post("/v1/sessions", json={"graph": "talk"}).status_code == 201
        lines = ready.output().splitlines()
        prepared = _first(lines, "graph `talk` prepared for its first session in ")
        assert prepared < _first(lines, "route=/healthz")
    # A provider model without its key: said once at the start, its sessions refused.
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "b"), "--memory", "off",
        "--model", "openai/gpt-4o-mini", folder=tmp_path, OPENAI_API_KEY="",
    ) as keyless:  # fmt: skip
        refused = keyless.client().post("/v1/sessions", json={"graph": "talk"})
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "not_servable"
        lines = keyless.output().splitlines()
        said = lines[_first(lines, "WARNING cgraph.serve: graph `talk` (")]
        assert f"({GRAPHS / 'talk.yaml'}): model `openai/gpt-4o-mini` needs an API key" in said
        assert said.endswith("its sessions are refused (422 not_servable) until the server"
                             " starts with that fixed")  # fmt: skip
        assert _first(lines, "graph `talk` (") < _first(lines, "route=/healthz")
        assert "Traceback" not in keyless.output()


def test_a_port_taken_while_the_server_prepares_is_said_alone(tmp_path: Path) -> None:
    import socket

    running = start(
        str(GRAPHS / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", "openai/any", "--api-base", "http://127.0.0.1:9/v1",
        folder=tmp_path, ready=False,
    )  # fmt: skip
    port = int(running.url.rsplit(":", 1)[1])
    try:
        deadline = time.monotonic() + 60
        while "cgraph serve: 1 graph(s)" not in running.output():  # checked, now preparing
            assert time.monotonic() < deadline and running.process.poll() is None
            time.sleep(0.05)
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                taken.bind(("127.0.0.1", port))
            except OSError:  # a machine fast enough to prepare litellm before this line
                pytest.skip("the server listened before the port could be taken")
            taken.listen()
            assert running.process.wait(120) == 1
        said = running.output()
        assert "prepared for its first session" in said  # the port was taken after the check
        assert f"cannot listen on 127.0.0.1:{port}" in said and "Traceback" not in said
    finally:
        running.stop()
