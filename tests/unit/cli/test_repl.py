"""The interactive transcript: how replies are shown."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any, cast

from rich.console import Console

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.cli import commands
from cgraph.cli.opening import Opened, load_checked
from cgraph.cli.repl import SPINNER_AFTER, Repl, late_status, stage_direction
from cgraph.lint.gate import offline_hints
from cgraph.session import Session, Sessions
from cgraph.spec.load import load_graph
from tests.conftest import GRAPHS

GRAPH = """\
cgraph: 1
name: card_help
description: A card-services line.
agent: {name: Sam, persona: A calm card-services agent.}
start: identify_issue
states:
  identify_issue:
    type: action
    objective: Find out what happened to the card.
    actions: [Greet the customer and introduce yourself., Ask what happened to the card.]
    intra_state_navigation_guidelines: [Greetings stay here.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never ask for the PIN.]
    exit_conditions:
      - {description: The card was stolen., next_state: spoken}
  spoken:
    type: action
    objective: Block the card.
    actions: [Block the card.]
    intra_state_navigation_guidelines: [Questions stay here.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never ask for the PIN.]
    say: I've blocked your card.
    exit_conditions:
      - {description: The customer is done., next_state: END}
"""


class ReadyMemory:
    """What the transcript asks of the background-opened memory store."""

    ready = True
    note = ""


def written(tmp_path: Path) -> Path:
    path = tmp_path / "card_help.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def terminal(
    tmp_path: Path, session: Session, model_name: str, width: int | None = None
) -> tuple[Repl, io.StringIO]:
    """A REPL on `session` that prints into the returned buffer."""
    opener = Sessions(session.store, model=session.model, memory=session.memory)
    opened = Opened(
        graph=session.graph,
        session=session,
        opener=opener,
        model_name=model_name,
        memory=cast(Any, ReadyMemory()),
        store=tmp_path,
        user="ann",
    )
    out = io.StringIO()
    return Repl(opened, Console(file=out, width=width)), out


def shown(tmp_path: Path, model_name: str, reply: dict[str, str]) -> str:
    graph = load_graph(written(tmp_path))
    session = Session.start(graph, model=ScriptedModel({"*": reply}), store=tmp_path)
    repl, out = terminal(tmp_path, session, model_name)
    repl.send("hi")
    return out.getvalue()


def test_offline_actions_without_say_are_shown_as_a_stage_direction(tmp_path: Path) -> None:
    actions = "Greet the customer and introduce yourself. Ask what happened to the card."
    text = shown(tmp_path, "semantic", {"exit": "stay", "reason": "r", "reply": actions})
    assert "(Sam: greet the customer and introduce yourself; ask what happened to the card)" in text
    assert "Sam: Greet" not in text


def test_a_model_that_writes_its_reply_is_quoted(tmp_path: Path) -> None:
    text = shown(tmp_path, "gpt-4o", {"exit": "stay", "reason": "r", "reply": "Hello there!"})
    assert "Sam: Hello there!" in text and "(Sam:" not in text


def test_stage_direction_wording() -> None:
    assert stage_direction("Greet them. Ask why?") == "greet them; ask why?"


def test_an_offline_run_hints_at_say_on_action_states_without_it(tmp_path: Path) -> None:
    _, hints = load_checked(written(tmp_path))
    assert [(d.code, d.line) for d in hints] == [("no-say", 7)]
    text = offline_hints(hints)
    assert text.startswith(f"hint: {tmp_path / 'card_help.yaml'}:7:3 action state `identify_issue`")
    assert "add `say:`" in text


def test_a_spinner_shows_only_for_a_step_that_takes_a_while() -> None:
    quick, slow = io.StringIO(), io.StringIO()
    with late_status(Console(file=quick, force_terminal=True), "thinking…"):
        pass
    with late_status(Console(file=slow, force_terminal=True), "thinking…"):
        time.sleep(SPINNER_AFTER + 0.5)
    assert quick.getvalue() == ""
    assert "thinking…" in slow.getvalue()


def test_why_puts_each_step_on_one_line_above_its_table(tmp_path: Path) -> None:
    graph = load_graph(written(tmp_path))
    reply = {"exit": "stay", "reason": "r", "reply": "Hello there!"}
    session = Session.start(graph, model=ScriptedModel({"*": reply}), store=tmp_path)
    repl, out = terminal(tmp_path, session, "gpt-4o", width=60)
    repl.send("hi")
    repl.command(commands.Command("why"))
    lines = out.getvalue().splitlines()
    assert "identify_issue (action) → stay" in lines  # not wrapped to the table's width
    # A model's choice has no scores: its candidates on one line, not a table of blanks.
    assert "  candidates: spoken, stay" in lines and "┏" not in out.getvalue()


def test_why_says_the_chosen_options_confidence_or_that_it_asked(tmp_path: Path) -> None:
    graph = load_graph(written(tmp_path))
    asked = {"exit": "clarify", "reason": "r", "reply": "Which?", "scores": {"stay": 0.5}}
    kept = {"exit": "stay", "reason": "r", "reply": "Hello there!", "scores": {"stay": 0.75}}
    session = Session.start(graph, model=ScriptedModel({"*": [asked, kept]}), store=tmp_path)
    repl, out = terminal(tmp_path, session, "gpt-4o", width=100)
    repl.send("hi")
    repl.command(commands.Command("why"))
    assert "identify_issue (action) → clarify (asked the user)" in out.getvalue()
    repl.send("hi again")
    repl.command(commands.Command("why"))
    assert "identify_issue (action) → stay (confidence 0.75)" in out.getvalue()


def test_a_guard_that_routes_the_turn_is_shown_as_routing_it(tmp_path: Path) -> None:
    first_exits = "    exit_conditions:\n      - {description: The card was"
    limited = GRAPH.replace(first_exits, "    max_turns: 1\n    on_limit: spoken\n" + first_exits)
    path = tmp_path / "card_help.yaml"
    path.write_text(limited, encoding="utf-8")
    graph = load_graph(path)
    reply = {"exit": "stay", "reason": "r", "reply": "Hello there!"}
    session = Session.start(graph, model=ScriptedModel({"*": reply}), store=tmp_path)
    repl, out = terminal(tmp_path, session, "gpt-4o", width=100)
    repl.send("hi")
    repl.send("hmm")
    assert "routed by the max_turns guard" in out.getvalue()
    assert "stopped by" not in out.getvalue()


def test_why_shows_a_confidence_for_every_exit_global_ones_too(
    tmp_path: Path,
) -> None:
    graph = load_graph(GRAPHS / "medical_checkin.yaml")
    session = Session.start(graph, store=tmp_path)  # offline: real embeddings
    repl, out = terminal(tmp_path, session, "semantic", width=120)
    for message in ("Hi", "Yes, ready", "I took all my pills"):
        repl.send(message)
    repl.command(commands.Command("why"))
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in _rows(out)}
    assert float(rows["emergency"]) < 0.1 < 0.5 < float(rows["vasodilator_check"])


def _rows(out: io.StringIO) -> list[str]:
    return [line for line in out.getvalue().splitlines() if line.startswith("│")]


BOOKS = """\
cgraph: 1
name: books
start: ask
slots:
  title: {type: string}
  branch: {type: string, enum: [Elm, Oak]}
  card: {type: string, pattern: "LIB-[0-9]+"}
states:
  ask:
    type: action
    objective: Learn the book, the branch and the card.
    actions: [Ask for them.]
    intra_state_navigation_guidelines: [Stay until all are known.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    say: Which book, which branch, and your card?
    collect: [branch, title, card]
    exit_conditions:
      - next_state: END
"""


def test_an_offline_run_hints_at_a_collected_slot_it_can_never_fill(tmp_path: Path) -> None:
    # Offline, a free-text slot stays unset (a wrong value is worse than asking again),
    # so the state that collects it would ask for it on every turn without saying why.
    path = tmp_path / "books.yaml"
    path.write_text(BOOKS, encoding="utf-8")
    _, hints = load_checked(path)
    (only,) = hints
    assert (only.code, only.line, only.column) == ("offline-slot", 17, 23)
    assert "collects `title`, a free-text slot that is never filled without an LLM" in only.message
    assert "`enum` or a `pattern`" in only.hint
    assert offline_hints(hints).startswith(f"hint: {path}:17:23 state `ask` collects `title`")


def test_a_typed_line_that_cannot_be_stored_is_refused_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    graph = load_graph(written(tmp_path))
    reply = {"exit": "stay", "reason": "r", "reply": "Hello there!"}
    session = Session.start(graph, model=ScriptedModel({"*": reply}), store=tmp_path)
    repl, out = terminal(tmp_path, session, "gpt-4o")
    for line in ("hi \udcff", "/memory \ud800", "nul \x00"):
        assert repl.take(line)  # refused, and the REPL goes on
    repl.send("hi \ud83d")  # the library refuses it too
    assert session.view.turn_number == 0 and session.transcript == []
    text = out.getvalue()
    assert "error: the message holds a byte that is not UTF-8 (0xff) at character 4" in text
    assert "error: the message holds a lone surrogate (U+D800) at character 9" in text
    assert "error: the message holds a NUL character at character 5" in text
    assert "error: the message holds a lone surrogate (U+D83D) at character 4" in text
    assert repl.take("hi") and session.view.turn_number == 1


def test_the_terminal_is_never_handed_a_control_character_of_the_model(tmp_path: Path) -> None:
    reply = "Line one\x1b]0;owned\x07\x1b[2J\r\nline two \u202e\x9b[31m [bold]x[/]"
    text = shown(tmp_path, "gpt-4o", {"exit": "stay", "reason": "r\x1b[H", "reply": reply})
    assert not any(c in text for c in "\x1b\r\x07\x9b\u202e")
    assert "Line one\\x1b]0;owned\\x07\\x1b[2J\\r\nline two \\u202e\\x9b[31m [bold]x[/]" in text
