"""The studio from 1024 px wide, in a real browser at three window sizes: the check-in is
chatted to its key decision, and the page is measured by the boxes the browser laid out.
No element of the top bar or of a pane's head overlaps another or spills out of its pane;
the session id stays on one line; the decision's two candidates, which share a long
prefix, are shown in full; each move of the turn is said once, in words a designer uses;
the drawing's exit labels are whole and legible at the default zoom. Screenshots of each
size go to the module's output folder (or `CGRAPH_STUDIO_SHOTS`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest

from tests.conftest import GRAPHS
from tests.studio import Studio, shots, studio_process

pytestmark = pytest.mark.slow

SIZES = [(1024, 700), (1366, 768), (1920, 1080)]
TO_THE_DECISION = (
    "Hi",
    "Yes, I'm ready.",
    "Yes, I took all my pills.",
    "No, I didn't need it.",
    "No chest pain.",
    "No, breathing is fine.",
)
"""The clear check-in up to `determine_exercise_clearance` (graphs/tests: its first case)."""
CANDIDATES = {"summarize_recommendations_approved", "summarize_recommendations_disqualified"}
WAIT_MS = 60_000

BOXES = """(selectors) => selectors.flatMap((selector) =>
  [...document.querySelectorAll(selector)]
    .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden")
    .map((e) => { const r = e.getBoundingClientRect();
      return {what: selector + " " + (e.id || e.className || e.textContent.trim().slice(0, 20)),
              left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }))"""
HEADS = {
    ".topbar": ".topbar > *:not(.spacer)",
    "#chat": "#chat .pane-head > *:not(.spacer)",
    "#graph-pane": "#graph-pane .pane-head > *:not(.spacer)",
}
EDGE_LABELS = """() => {
  const svg = document.querySelector("#graph svg");
  const box = svg.viewBox.baseVal, rect = svg.getBoundingClientRect();
  const perUnit = Math.min(rect.width / box.width, rect.height / box.height);
  return [...svg.querySelectorAll("g.edge text")].map((t) => ({
    text: t.textContent, px: parseFloat(t.getAttribute("font-size")) * perUnit}));
}"""


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    folder = tmp_path_factory.mktemp("layout")
    shutil.copy(GRAPHS / "medical_checkin.yaml", folder / "medical_checkin.yaml")
    args = ("studio", "medical_checkin.yaml", "--no-browser", "--store", str(folder / "store"))
    with studio_process(*args, folder=folder, cwd=folder) as running:
        yield running


@pytest.fixture(scope="module", params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def page(request: pytest.FixtureRequest, chromium: Any, studio: Studio) -> Iterator[Any]:
    width, height = request.param
    context = chromium.new_context(viewport={"width": width, "height": height})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(studio.address)
    opened.wait_for_selector("body[data-ready='1']")
    opened.click("#restart")  # a session of its own at each size
    opened.wait_for_function("document.querySelectorAll('li.turn').length === 0")
    for number, text in enumerate(TO_THE_DECISION, 1):
        opened.fill("#text", text)
        opened.press("#text", "Enter")
        opened.wait_for_selector(f"li.turn[data-turn='{number}']:not(.pending)")
        opened.wait_for_selector("body:not([data-busy='1'])")
    last = opened.locator(f"li.turn[data-turn='{len(TO_THE_DECISION)}']")
    last.locator("details.why summary").click()
    opened.evaluate("document.getElementById('messages').scrollTop = 1e6")
    yield opened
    opened.evaluate(
        "(n) => { document.querySelector(`li.turn[data-turn='${n}'] details.why`).open = true; }",
        len(TO_THE_DECISION),
    )
    opened.evaluate("document.getElementById('messages').scrollTop = 1e6")
    opened.screenshot(path=str(shots(studio.log.parent) / f"studio-{width}x{height}.png"))
    context.close()
    assert errors == [], errors


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5 and (
        min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    )


def test_nothing_in_the_heads_overlaps_or_spills_out_of_its_pane(page: Any) -> None:
    for container, children in HEADS.items():
        (pane,) = page.evaluate(BOXES, [container])
        boxes = page.evaluate(BOXES, [children])
        assert len(boxes) >= 3, boxes
        for box in boxes:
            inside = pane["left"] - 0.5 <= box["left"] and box["right"] <= pane["right"] + 0.5
            assert inside, (box, pane)
        pairs = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]]
        assert [(a["what"], b["what"]) for a, b in pairs if _overlap(a, b)] == []


def test_the_session_id_stays_on_one_line(page: Any) -> None:
    label = page.locator("#session-label")
    lines = page.evaluate(
        "(e) => e.getClientRects().length === 1 && e.getBoundingClientRect().height < 24",
        label.element_handle(),
    )
    assert lines, label.bounding_box()
    assert str(label.get_attribute("title")).startswith("session ")  # whole, on hover


def test_the_decisions_candidates_are_shown_in_full(page: Any) -> None:
    why = page.locator(f"li.turn[data-turn='{len(TO_THE_DECISION)}'] details.why")
    names = why.locator(".scores .name")
    shown = {str(n).strip() for n in names.all_text_contents()}
    assert shown >= CANDIDATES, shown
    (chat,) = page.evaluate(BOXES, ["#chat"])
    for cell in names.element_handles():
        clipped = page.evaluate("(e) => e.scrollWidth > e.clientWidth + 1", cell)
        box = cell.bounding_box()
        assert not clipped and box["x"] + box["width"] <= chat["right"], cell.text_content()


def test_each_move_is_said_once_in_a_designers_words(page: Any) -> None:
    why = page.locator(f"li.turn[data-turn='{len(TO_THE_DECISION)}'] details.why")
    moves = [str(m) for m in why.locator(".moves .move").all_text_contents()]
    text = str(why.text_content())
    path = str(why.locator("summary .path").text_content()).split(" → ")
    for before, after in pairwise(path):
        assert moves.count(f"{before} → {after}") == 1, moves
        assert text.count(f"{before} → {after}") <= 2  # in the summary's path, and its move
    assert moves[-1] == "summarize_recommendations_approved waits for the next message"
    assert " chose " not in text and "speaks first" not in text, text


def test_exit_labels_are_whole_and_legible_at_the_default_zoom(page: Any) -> None:
    labels = page.evaluate(EDGE_LABELS)
    assert labels, "no exit labels drawn"
    assert [x["text"] for x in labels if "…" in x["text"]] == []
    assert min(x["px"] for x in labels) >= 10.5, sorted(labels, key=lambda x: x["px"])[:3]
