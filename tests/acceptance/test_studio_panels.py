"""What the studio shows under a reply besides the move, in a real browser: the slots a
turn filled and the tools it called (the restaurant reservation, its handlers run in the
tool worker), and the memories a turn recalled (the companion, which stores what the user
said and recalls it the next turn). Screenshots go to the module's output folder."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GRAPHS
from tests.studio import Studio, browser_page, shots, studio_process

pytestmark = pytest.mark.slow

WAIT_MS = 30_000


@contextmanager
def studied(tmp_path: Path, graph: str, *others: str) -> Iterator[Studio]:
    for name in (graph, *others):
        shutil.copy(GRAPHS / name, tmp_path / name)
    shutil.copytree(GRAPHS / "tools", tmp_path / "tools")
    args = ("studio", graph, "--no-browser", "--store", str(tmp_path / "store"))
    with studio_process(*args, folder=tmp_path, cwd=tmp_path) as running:
        yield running


@contextmanager
def opened(chromium: Any, studio: Studio) -> Iterator[Any]:
    with browser_page(chromium, WAIT_MS) as page:
        page.goto(studio.address)
        page.wait_for_selector("body[data-ready='1']")
        yield page


def send(page: Any, text: str, turn: int) -> Any:
    page.fill("#text", text)
    page.press("#text", "Enter")
    page.wait_for_selector(f"li.turn[data-turn='{turn}']:not(.pending)")
    page.wait_for_selector("body:not([data-busy='1'])")
    return page.locator(f"li.turn[data-turn='{turn}'] details.why")


def test_slots_filled_and_tools_called_are_shown_under_the_reply(
    chromium: Any, tmp_path: Path
) -> None:
    with (
        studied(tmp_path, "restaurant_reservation.yaml") as studio,
        opened(chromium, studio) as page,
    ):
        why = send(page, "Table for 4 at 7 pm", 1 + 1)  # turn 1 is the opening (it speaks first)
        summary = str(why.locator("summary").text_content())
        assert "1 tool call" in summary and "slots" in summary, summary
        slots = " ".join(why.locator(".line.slots").all_text_contents())
        assert "party_size = 4" in slots and 'time = "19:00"' in slots, slots
        tool = str(why.locator(".line.tool").first.text_content())
        assert "check_availability(" in tool and '"party_size":4' in tool, tool
        assert " done → " in tool, tool
        page.screenshot(path=str(shots(tmp_path) / "studio-tools-and-slots.png"))


def test_memories_recalled_are_shown_with_their_tier_and_score(
    chromium: Any, tmp_path: Path
) -> None:
    with studied(tmp_path, "companion.yaml") as studio, opened(chromium, studio) as page:
        send(page, "Hi, I am writing a novel and I am on chapter two.", 1)
        why = send(page, "I finished the first chapter of my novel!", 2)
        assert "recalled" in str(why.locator("summary").text_content())
        recalled = str(why.locator(".line.recalled").first.text_content())
        assert "writing a novel" in recalled and "task, 0." in recalled, recalled
        page.screenshot(path=str(shots(tmp_path) / "studio-recalled.png"))


def test_open_interruptions_are_shown_where_they_come_back_to(
    chromium: Any, tmp_path: Path
) -> None:
    with (
        studied(tmp_path, "contacts.yaml", "add_contact.yaml", "remove_contact.yaml") as studio,
        opened(chromium, studio) as page,
    ):
        for turn, text in enumerate(["Can you save a new contact for me?", "@sam"], 1):
            send(page, text, turn)
        assert "then back to hub" in str(page.text_content("#now-state"))
        send(page, "Actually, first remove @bob.", 3)
        now = str(page.text_content("#now-state"))
        assert "then back to add_contact.yaml#ask_name, then hub" in now, now
        send(page, "Yes, delete.", 4)
        assert "then back to hub" in str(page.text_content("#now-state"))
        page.screenshot(path=str(shots(tmp_path) / "studio-interrupted.png"))


PATIENCE = """\
cgraph: 1
name: patience
start: ask
states:
  ask:
    type: action
    objective: Learn the order number.
    actions: [Ask for the order number.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    say: What is your order number?
    max_turns: 2
    on_limit: person
    exit_conditions:
      - description: The customer gives the order number.
        examples: ["It's 12345.", "Order 555"]
        next_state: done
  person:
    type: annotation
    objective: Hand over.
    say: Let me put you through to a person.
    next_state: END
  done:
    type: annotation
    objective: Thank.
    say: Thanks.
    next_state: END
"""


def test_a_guard_that_routed_the_turn_is_marked_and_named(chromium: Any, tmp_path: Path) -> None:
    (tmp_path / "patience.yaml").write_text(PATIENCE)
    args = ("studio", "patience.yaml", "--no-browser", "--store", str(tmp_path / "store"))
    with (
        studio_process(*args, folder=tmp_path, cwd=tmp_path) as studio,
        opened(chromium, studio) as page,
    ):
        for turn, text in enumerate(["hmm", "I don't know"], 1):
            assert "guard" not in str(send(page, text, turn).locator("summary").text_content())
        why = send(page, "no idea", 3)
        assert "guard" in str(why.locator(".tag.warn").first.text_content())
        guard = str(why.locator(".line.guard").text_content())
        assert "max_turns stopped or re-routed this turn" in guard, guard
        assert str(page.text_content("#now-state")).startswith("END ·")  # no state type
        page.screenshot(path=str(shots(tmp_path) / "studio-guard.png"))
