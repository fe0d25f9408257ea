"""`cgraph studio` in a real browser: a designer chats with the check-in, watches the lit
state move, undoes, restarts, reopens a session, edits the graph file (broken, then
fixed, then changed and replayed) and saves the conversation as a test. One studio
process (on a copy of the graph) and one Chromium serve the whole module; each test opens
its own page, and a test that edits the file puts it back. Screenshots of each step go to
the module's output folder (or `CGRAPH_STUDIO_SHOTS`)."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.commands import CGRAPH, ran
from tests.conftest import GRAPHS
from tests.studio import Studio, browser_page, shots, studio_process

pytestmark = pytest.mark.slow

CHECK_IN = (
    ("Hi, I'm ready for my check-in", "welcome_patient", "medication_adherence_check"),
    ("Yes, I took all my pills.", "medication_adherence_check", "vasodilator_check"),
    ("No, I did not need it.", "vasodilator_check", "check_chest_pain"),
)
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("studio")
    shutil.copy(GRAPHS / "medical_checkin.yaml", made / "medical_checkin.yaml")
    return made


@pytest.fixture(scope="module")
def studio(folder: Path) -> Iterator[Studio]:
    args = ("studio", "medical_checkin.yaml", "--no-browser", "--store", str(folder / "store"))
    with studio_process(*args, folder=folder, cwd=folder) as running:
        yield running


@pytest.fixture
def page(chromium: Any, studio: Studio) -> Iterator[Any]:
    with browser_page(chromium, WAIT_MS) as opened:
        opened.goto(studio.address)
        opened.wait_for_selector("body[data-ready='1']")
        yield opened


@pytest.fixture
def graph_file(folder: Path) -> Iterator[Path]:
    """The studied file, put back as it was after the test (and the studio told)."""
    file = folder / "medical_checkin.yaml"
    original = file.read_text()
    yield file
    file.write_text(original)


def snap(page: Any, folder: Path, name: str) -> None:
    page.screenshot(path=str(shots(folder) / f"studio-{name}.png"))


def send(page: Any, text: str, turn: int) -> None:
    page.fill("#text", text)
    page.press("#text", "Enter")
    page.wait_for_selector(f"li.turn[data-turn='{turn}']:not(.pending)")
    page.wait_for_selector("body:not([data-busy='1'])")


def current(page: Any) -> str:
    return str(page.text_content("#graph g.node.current > title"))


def marked(page: Any, selector: str) -> list[str]:
    return list(page.eval_on_selector_all(selector, "found => found.map(e => e.id)"))


def check_in(page: Any, turns: int = 3) -> None:
    for number, (text, _, state) in enumerate(CHECK_IN[:turns], 1):
        send(page, text, number)
        assert current(page) == state


def reload_when_changed(page: Any, button: str) -> None:
    page.wait_for_selector("#changed:not([hidden])")
    page.click(button)
    page.wait_for_selector("body:not([data-busy='1'])")


def test_three_messages_move_the_lit_state_and_draw_the_path(page: Any, folder: Path) -> None:
    assert page.text_content("#graph-name") == "medical_checkin"
    assert page.text_content("#lint-badge") == "lint clean"
    assert current(page) == "START"
    snap(page, folder, "1-open")
    # The streamed answers' headers, noted as they come (a listener that only notes: the
    # sync API's `expect_response` waiter crashed this interpreter once, in its greenlet).
    streamed: list[dict[str, str]] = []
    page.on("response", lambda r: streamed.append(r.headers) if _streams(r.url) else None)
    for number, (text, before, state) in enumerate(CHECK_IN, 1):
        send(page, text, number)
        assert len(streamed) == number
        assert streamed[-1]["content-type"].startswith("text/event-stream")
        turn = page.locator(f"li.turn[data-turn='{number}']")
        assert turn.locator(".bubble.user").text_content() == text
        reply = turn.locator(".bubble.agent")
        assert reply.text_content() and int(reply.get_attribute("data-deltas") or 0) >= 1
        assert current(page) == state
        assert f"e-{before}-{state}" in marked(page, "#graph g.edge.latest")
        assert {f"s-{before}", f"s-{state}"} <= set(marked(page, "#graph g.node.path"))
        assert f"{before} → {state}" in str(turn.locator(".why summary").text_content())
        assert turn.locator(".why .scores tr.chosen .name").first.text_content() == state
        snap(page, folder, f"2-turn-{number}")
    visited = set(marked(page, "#graph g.node.entered"))
    assert {f"s-{s}" for _, s, _ in CHECK_IN} <= visited
    assert len(marked(page, "#graph g.edge.taken")) == 4  # START's entry and three exits
    assert page.locator("li.turn details.why[open]").count() == 1  # the latest turn's
    assert "check_chest_pain" in str(page.text_content("#now-state"))
    assert page.locator("#variables th", has_text="red_flags").count() == 1


def _streams(url: str) -> bool:
    return url.endswith("/messages:stream")


def test_undo_restart_and_a_session_reopened(page: Any, folder: Path) -> None:
    check_in(page, 2)
    first = str(page.text_content("#session-label")).split()[-1]
    page.click("#undo")
    page.wait_for_selector("li.turn[data-turn='2']", state="detached")
    page.wait_for_selector("body:not([data-busy='1'])")
    assert current(page) == "medication_adherence_check"
    assert "Took back turn 2" in str(page.text_content("#message-text"))
    snap(page, folder, "3-undone")
    page.click("#restart")
    page.wait_for_function(
        f"!document.getElementById('session-label').textContent.includes('{first}')"
    )
    page.wait_for_selector("body:not([data-busy='1'])")
    assert page.locator("li.turn").count() == 0 and current(page) == "START"
    page.click("#sessions-button")
    page.click(f"#sessions button[data-session='{first}']")
    page.wait_for_selector("li.turn[data-turn='1']")
    assert page.locator("li.turn").count() == 1
    assert current(page) == "medication_adherence_check"
    snap(page, folder, "4-reopened")


def test_a_broken_edit_shows_the_located_diagnostic_and_a_fix_starts_a_new_session(
    page: Any, folder: Path, graph_file: Path
) -> None:
    good = graph_file.read_text()
    send(page, CHECK_IN[0][0], 1)
    before = str(page.text_content("#session-label"))
    broken = good.replace("    objective: Greet the patient", "    objective: [Greet the patient")
    line = broken.splitlines().index(
        next(x for x in broken.splitlines() if x.startswith("    objective: [Greet"))
    )
    graph_file.write_text(broken)
    reload_when_changed(page, "#reload-new")
    page.wait_for_selector("#diagnostics:not([hidden])")
    listed = str(page.text_content("#diagnostics-list"))
    assert f"medical_checkin.yaml:{line + 1}:16" in listed and "yaml-syntax" in listed
    assert page.text_content("#lint-badge") == "1 lint problem"
    assert page.text_content("#session-label") == before  # the last good graph runs on
    snap(page, folder, "5-broken")
    graph_file.write_text(good)
    reload_when_changed(page, "#reload-new")
    page.wait_for_selector("#diagnostics", state="hidden")
    assert page.text_content("#session-label") != before
    assert "a new session on the edited graph" in str(page.text_content("#message-text"))
    send(page, CHECK_IN[0][0], 1)
    assert current(page) == "medication_adherence_check"
    snap(page, folder, "6-fixed")


def test_a_replay_after_an_edit_shows_where_the_conversation_now_differs(
    page: Any, folder: Path, graph_file: Path
) -> None:
    check_in(page)
    good = graph_file.read_text()
    took_all = "medications as prescribed.\n        next_state: vasodilator_check"
    drawn = "(Medication information provided) -> [A] vasodilator_check"
    assert took_all in good and drawn in good
    skip = good.replace(took_all, took_all.replace("vasodilator_check", "check_chest_pain"))
    graph_file.write_text(
        skip.replace(drawn, drawn.replace("vasodilator_check", "check_chest_pain"))
    )
    reload_when_changed(page, "#reload-replay")
    page.wait_for_selector("li.turn[data-turn='3']")
    assert page.locator("li.turn[data-turn='1'] .difference").count() == 0
    changed = str(page.locator("li.turn[data-turn='2'] .difference").text_content())
    assert "was medication_adherence_check → vasodilator_check" in changed
    assert "now medication_adherence_check → check_chest_pain" in changed
    assert re.search(
        r"Replayed 3 messages on the edited graph: \d turns? now differ",
        str(page.text_content("#message-text")),
    )
    assert current(page) != "check_chest_pain"
    snap(page, folder, "7-replayed")
    graph_file.write_text(good)
    reload_when_changed(page, "#reload-new")


def test_save_as_test_writes_a_case_cgraph_test_passes(page: Any, folder: Path) -> None:
    check_in(page)
    page.click("#save-button")
    page.fill("#case-name", "a check-in up to the chest pain question")
    page.click("#save-confirm")
    page.wait_for_selector("#message.ok")
    assert "Saved case “a check-in up to the chest pain question” (3 turns)" in str(
        page.text_content("#message-text")
    )
    snap(page, folder, "8-saved")
    saved = folder / "medical_checkin.studio.test.yaml"
    done = ran([str(CGRAPH), "test", str(saved)], cwd=folder, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_server_error_is_a_message_not_a_broken_page(page: Any, studio: Studio) -> None:
    send(page, CHECK_IN[0][0], 1)
    sid = str(page.text_content("#session-label")).split()[-1]
    assert httpx.delete(f"{studio.url}/v1/sessions/{sid}").status_code == 204
    page.fill("#text", "Yes, I took all my pills.")
    page.press("#text", "Enter")
    page.wait_for_selector("#message.error")
    assert f"Not sent: no session `{sid}`" in str(page.text_content("#message-text"))
    assert page.input_value("#text") == "Yes, I took all my pills."  # kept to send again
    page.click("#restart")
    page.wait_for_selector("body:not([data-busy='1'])")
    deadline = time.monotonic() + 5
    while page.locator("li.turn").count() and time.monotonic() < deadline:
        time.sleep(0.05)
    send(page, CHECK_IN[0][0], 1)
    assert current(page) == "medication_adherence_check"
