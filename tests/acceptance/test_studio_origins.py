"""No other web page can drive the studio or a token-less server: a page on another local
port, in a real Chromium, sends the "simple" requests a browser sends without asking
(`text/plain` and form POSTs, `no-cors`) to create a session with an id it picks, talk to
it, undo, reload the graph and save a test case; none of it happens, against the studio
and against a plain `cgraph serve` without tokens. A rebound name in `Host` reads
nothing, and the studio's own endpoints want this launch's secret."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import GRAPHS
from tests.serving import free_port
from tests.studio import Studio, browser_page, studio_process

PLANTED = "planted"
ATTACK = """<!doctype html><title>elsewhere</title><body>
<form id="f" method="post" enctype="text/plain" target="sink">
<input name='{"graph":"GRAPH","session_id":"formed","x":"' value='"}'></form>
<iframe name="sink"></iframe><script>
const to = "TARGET";
const plain = (path, body) => fetch(to + path, {method: "POST", mode: "no-cors",
  headers: {"content-type": "text/plain"}, body}).catch(() => null);
(async () => {
  await plain("/v1/sessions", JSON.stringify({graph: "GRAPH", session_id: "PLANTED"}));
  await plain("/v1/sessions/PLANTED/messages", JSON.stringify({text: "Hi, I'm ready"}));
  await plain("/v1/sessions/PLANTED/messages:stream", JSON.stringify({text: "chest pain"}));
  const bare = {method: "POST", mode: "no-cors"};
  await fetch(to + "/v1/sessions/PLANTED/undo", bare).catch(() => null);
  await plain("/studio/api/reload", JSON.stringify({file: "medical_checkin.yaml"}));
  await plain("/studio/api/sessions/PLANTED/test", JSON.stringify({name: "planted"}));
  const f = document.getElementById("f"); f.action = to + "/v1/sessions"; f.submit();
  setTimeout(() => { document.body.dataset.done = "1"; }, 1500);
})();
</script>"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("origins")
    shutil.copy(GRAPHS / "medical_checkin.yaml", made / "medical_checkin.yaml")
    return made


@pytest.fixture(scope="module")
def studio(folder: Path) -> Iterator[Studio]:
    args = ("studio", "medical_checkin.yaml", "--no-browser", "--store", str(folder / "store"))
    with studio_process(*args, folder=folder, cwd=folder) as running:
        yield running


@contextmanager
def attacking(target: str, graph: str) -> Iterator[str]:
    """The address of a page served on another local port, aimed at `target`."""
    page = ATTACK.replace("TARGET", target).replace("PLANTED", PLANTED)
    page_bytes = page.replace("GRAPH", graph).encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page_bytes)

        def log_message(self, *args: Any) -> None:
            pass

    port = free_port()
    served = http.server.ThreadingHTTPServer(("127.0.0.1", port), Page)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        served.shutdown()


@pytest.fixture(scope="module")
def elsewhere(studio: Studio) -> Iterator[str]:
    with attacking(studio.url, "medical_checkin") as address:
        yield address


def test_a_page_on_another_port_cannot_drive_the_studio(
    chromium: Any, studio: Studio, elsewhere: str, folder: Path
) -> None:
    graph = (folder / "medical_checkin.yaml").read_text()
    with browser_page(chromium, 20_000) as page:
        page.goto(elsewhere)
        page.wait_for_selector("body[data-done='1']")
    client = studio.visitor()
    assert client.get("/v1/sessions").json()["sessions"] == []
    assert client.get(f"/v1/sessions/{PLANTED}").status_code == 404
    assert sorted(p.name for p in folder.glob("*.yaml")) == ["medical_checkin.yaml"]  # no test file
    assert (folder / "medical_checkin.yaml").read_text() == graph
    assert "Traceback" not in studio.output()


def test_a_page_on_another_port_cannot_drive_a_server_without_tokens(
    chromium: Any, tmp_path: Path
) -> None:
    from tests.serving import GRAPHS as SERVED
    from tests.serving import SCRIPT, serving

    options = ("--store", str(tmp_path / "s"), "--memory", "off", "--model", f"scripted:{SCRIPT}")
    with (
        serving(str(SERVED / "talk.yaml"), *options, folder=tmp_path) as running,
        attacking(running.url, "talk") as address,
        browser_page(chromium, 20_000) as page,
    ):
        page.goto(address)
        page.wait_for_selector("body[data-done='1']")
        client = running.client()
        assert client.get("/v1/sessions").json()["sessions"] == []
        assert client.get(f"/v1/sessions/{PLANTED}").status_code == 404
        assert "Traceback" not in running.output()


def test_the_studio_still_opens_through_its_address(chromium: Any, studio: Studio) -> None:
    with browser_page(chromium, 20_000) as page:
        page.goto(studio.address)
        page.wait_for_selector("body[data-ready='1']")
        assert "secret" not in page.url  # turned into a cookie, dropped from the address
        page.fill("#text", "Hi, I'm ready for my check-in")
        page.press("#text", "Enter")
        page.wait_for_selector("li.turn[data-turn='1']:not(.pending)")
    client = studio.visitor()
    (made,) = client.get("/v1/sessions").json()["sessions"]
    assert client.delete(f"/v1/sessions/{made['session']}").status_code == 204


def test_each_refusal_says_why(studio: Studio) -> None:
    client = studio.visitor()
    plain = {"content-type": "text/plain"}
    body = b'{"graph": "medical_checkin"}'
    cases = [
        (client.post("/v1/sessions", content=body, headers=plain), 415, "unsupported_media_type"),
        (client.post("/v1/sessions", content=body), 415, "unsupported_media_type"),
        (
            client.post(
                "/v1/sessions", json={"graph": "x"}, headers={"origin": "http://evil.test"}
            ),
            403,
            "foreign_origin",
        ),
        (client.post("/v1/x/undo", headers={"origin": "null"}), 403, "foreign_origin"),
        (client.get("/v1/sessions", headers={"host": "rebound.example"}), 421, "unknown_host"),
        (
            client.get("/v1/sessions", headers={"host": f"rebound.example:{studio.url[-5:]}"}),
            421,
            "unknown_host",
        ),
        (httpx.get(f"{studio.url}/studio"), 403, "studio_secret"),
        (httpx.get(f"{studio.url}/studio?secret=guessed"), 403, "studio_secret"),
        (httpx.get(f"{studio.url}/studio/api/graphs"), 403, "studio_secret"),
        (httpx.get(f"{studio.url}/studio/static/studio.js"), 403, "studio_secret"),
    ]
    for done, status, code in cases:
        assert (done.status_code, done.json()["error"]["code"]) == (status, code), done.text
    own = studio.url
    same = client.post("/v1/sessions", json={"graph": "medical_checkin"}, headers={"origin": own})
    assert same.status_code == 201, same.text
    for name in ("localhost", "[::1]"):
        port = own.rsplit(":", 1)[1]
        assert client.get("/v1/graphs", headers={"host": f"{name}:{port}"}).status_code == 200
    assert client.delete(f"/v1/sessions/{same.json()['session']}").status_code == 204


def test_an_allowed_origin_may_write_and_gets_cors(tmp_path: Path) -> None:
    from tests.serving import GRAPHS as SERVED
    from tests.serving import SCRIPT, serving

    front = "https://app.example"
    with serving(
        str(SERVED / "talk.yaml"), "--store", str(tmp_path / "s"), "--memory", "off",
        "--model", f"scripted:{SCRIPT}", "--allow-origin", front, folder=tmp_path,
    ) as running:  # fmt: skip
        client = running.client()
        asked = client.options(
            "/v1/sessions",
            headers={
                "origin": front,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type",
            },
        )
        assert asked.status_code == 200 and asked.headers["access-control-allow-origin"] == front
        made = client.post("/v1/sessions", json={"graph": "talk"}, headers={"origin": front})
        assert made.status_code == 201 and made.headers["access-control-allow-origin"] == front
        other = client.post(
            "/v1/sessions", json={"graph": "talk"}, headers={"origin": "https://x.example"}
        )
        assert other.status_code == 403
