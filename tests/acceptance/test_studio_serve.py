"""`cgraph serve --studio`: the page beside the API, on a graph of 200 states with a
300-turn session (the page opens it whole, the picture pans and zooms) and on a graph
whose `graph` state opens as a cluster that the lit state follows into. One server and
one Chromium for the module."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.commands import CGRAPH, ran
from tests.conftest import FIXTURES
from tests.studio import Studio, browser_page, shots, studio_process

pytestmark = pytest.mark.slow

STATES = 200
TURNS = 300
FLOWS = FIXTURES / "flows" / "root.yaml"


def long_form(states: int) -> dict[str, Any]:
    """A form of `states` questions in sections of ten: each answered moves on, a section
    can be redone from its start or skipped, and a global exit reaches the last one."""
    names = [f"s{i}" for i in range(states)]
    built = {}
    for i, name in enumerate(names):
        exits = [
            {
                "description": f"The user answered item {i}.",
                "next_state": names[i + 1] if i + 1 < states else "END",
                "examples": ["done"],
            }
        ]
        if i % 10 == 9 and i + 11 < states:
            exits.append(
                {
                    "description": f"The user skips section {i // 10 + 1}.",
                    "next_state": names[i + 11],
                }
            )
        if i % 10:
            exits.append(
                {
                    "description": "The user wants to redo this section.",
                    "next_state": names[i - i % 10],
                }
            )
        built[name] = {
            "type": "action",
            "objective": f"Learn item {i}.",
            "actions": [f"Ask for item {i}."],
            "intra_state_navigation_guidelines": ["Stay until it is answered."],
            "action_guidelines": ["Be brief."],
            "boundary_constraints": ["Never guess."],
            "say": f"Item {i}?",
            "exit_conditions": exits,
        }
    last = {"description": "The user wants a person.", "next_state": names[-1]}
    return {
        "cgraph": 1,
        "name": "long_form",
        "start": "s0",
        "global_exits": [last],
        "states": built,
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("studio-serve")
    (made / "long_form.yaml").write_text(yaml.safe_dump(long_form(STATES), sort_keys=False))
    return made


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Studio]:
    args = ("serve", "long_form.yaml", str(FLOWS), "--studio", "--store", str(folder / "store"))
    limits = ("--memory", "off", "--turns-per-minute", "100000")
    with studio_process(*args, *limits, folder=folder, cwd=folder) as running:
        yield running


@pytest.fixture
def page(chromium: Any, server: Studio) -> Iterator[Any]:
    with browser_page(chromium, 30_000) as opened:
        yield opened


def view_box(page: Any) -> list[float]:
    return [float(v) for v in str(page.get_attribute("#graph svg", "viewBox")).split()]


def test_the_page_and_its_files_are_served_and_not_in_the_api_description(server: Studio) -> None:
    with server.visitor() as client:
        assert "<title>cgraph studio</title>" in client.get("/studio").text
        for name, kind in (("studio.js", "javascript"), ("studio.css", "css")):
            answered = client.get(f"/studio/static/{name}")
            assert answered.status_code == 200 and kind in answered.headers["content-type"]
        assert client.get("/studio/static/secrets.txt").status_code == 404
        watched = {g["name"] for g in client.get("/studio/api/graphs").json()["graphs"]}
        assert {"long_form", "root"} <= watched
        paths = client.get("/openapi.json").json()["paths"]
        assert not any(path.startswith("/studio") for path in paths)
        home = client.get("/")  # a visitor of the server's address finds the page
        assert (home.status_code, home.headers["location"]) == (307, "/studio")


def test_a_300_turn_session_on_a_200_state_graph_opens_and_pans_and_zooms(
    page: Any, server: Studio, folder: Path
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        sid = client.post("/v1/sessions", json={"graph": "long_form"}).json()["session"]
        for number in range(TURNS):  # every other message answers, the others hedge
            text = "done" if number % 2 == 0 else "hmm, maybe"
            sent = client.post(f"/v1/sessions/{sid}/messages", json={"text": text})
            assert sent.status_code == 200, sent.text
    started = time.monotonic()
    page.goto(f"{server.address}#graph=long_form.yaml&session={sid}")
    page.wait_for_selector("body[data-ready='1']")
    opened = time.monotonic() - started
    assert page.locator("li.turn").count() == TURNS
    assert opened < 15, f"the page took {opened:.1f} s to open the session"
    assert page.text_content("#graph g.node.current > title") == f"s{TURNS // 2}"
    assert page.locator("#graph g.node.entered").count() == TURNS // 2 + 1
    shown = view_box(page)
    full = [
        float(v)
        for v in page.evaluate(
            "S.view && [S.view.full.x, S.view.full.y, S.view.full.w, S.view.full.h]"
        )
    ]
    assert shown[2] * shown[3] < full[2] * full[3] / 4  # a legible part, not the whole form
    shots_folder = shots(folder)
    page.screenshot(path=str(shots_folder / "studio-9-long-session.png"))
    page.click("#zoom-in")
    assert view_box(page)[2] < shown[2]
    page.click("#zoom-fit")
    assert view_box(page)[2] >= full[2] - 1
    page.mouse.move(1000, 400)
    page.mouse.wheel(0, -400)
    width = "Number(document.querySelector('#graph svg').getAttribute('viewBox').split(' ')[2])"
    page.wait_for_function(f"{width} < {full[2] - 1}")
    before = view_box(page)
    page.mouse.move(1000, 400)
    page.mouse.down()
    page.mouse.move(900, 300, steps=4)
    page.mouse.up()
    after = view_box(page)
    assert after[0] > before[0] and after[1] > before[1]  # dragged up-left: the view moved


def test_a_graph_state_opens_as_a_cluster_and_the_lit_state_follows_into_it(
    page: Any, server: Studio, folder: Path
) -> None:
    page.goto(server.address)
    page.wait_for_selector("body[data-ready='1']")
    page.select_option("#graph-choice", value=str(FLOWS))
    page.wait_for_function(
        "document.getElementById('graph-file').textContent.endsWith('root.yaml')"
    )
    page.wait_for_selector("#graph g.node.opens")
    page.fill("#text", "hello")
    page.press("#text", "Enter")
    page.wait_for_selector("li.turn[data-turn='1']:not(.pending)")
    assert page.text_content("#graph g.node.current > title") == "s"  # closed: the graph state
    page.click("#graph g.node.opens")
    page.wait_for_selector("#graph g.cluster")
    page.wait_for_function(
        "document.querySelector('#graph g.node.current > title')?.textContent === 'side.yaml#a'"
    )
    assert "e-s-a" in page.eval_on_selector_all(
        "#graph g.edge.latest", "found => found.map(e => e.id)"
    )
    page.screenshot(path=str(shots(folder) / "studio-10-cluster.png"))
    page.click("#graph g.node.opens")
    page.wait_for_selector("#graph g.cluster", state="detached")
    page.wait_for_function(
        "document.querySelector('#graph g.node.current > title')?.textContent === 's'"
    )


def test_a_graph_with_errors_still_opens_and_says_where(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        (FIXTURES / "serve" / "graphs" / "talk.yaml")
        .read_text()
        .replace("start: talk", "start: tlak")
    )
    args = ("studio", "broken.yaml", "--no-browser", "--store", str(tmp_path / "store"))
    with studio_process(*args, folder=tmp_path, cwd=tmp_path) as running:
        (watched,) = running.visitor().get("/studio/api/graphs").json()["graphs"]
        assert watched["name"] is None and watched["lint"] == "errors"
        assert watched["diagnostics"][0]["text"].startswith("broken.yaml:4:8 error unknown-state")
        drawn = running.visitor().get("/studio/api/picture", params={"file": "broken.yaml"})
        assert drawn.status_code == 409 and "has errors" in drawn.json()["error"]["message"]
        assert "1 error(s) — the page shows them" in running.output()


def test_the_commands_refuse_what_they_cannot_serve(tmp_path: Path) -> None:
    missing = ran([str(CGRAPH), "studio", "no-such.yaml", "--no-browser"], cwd=tmp_path)
    assert missing.returncode == 2 and "error: no-such.yaml: no such file" in missing.stderr
    talk = str(FIXTURES / "serve" / "graphs" / "talk.yaml")
    shared = ran([str(CGRAPH), "serve", talk, "--studio", "--workers", "2"], cwd=tmp_path)
    assert shared.returncode == 1 and "--studio is a page for one designer" in shared.stderr
