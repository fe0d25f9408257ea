"""Stdin mode of `cgraph run`: slash commands, keyed JSON lines, the recovered turn."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, cast

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.cli import commands
from cgraph.cli.lines import Message, parse_line, plain, run_lines
from cgraph.cli.opening import Opened
from cgraph.runtime.ports import NullMemory
from cgraph.session import Session, Sessions
from cgraph.spec.load import load_graph
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
STAY = {"*": {"exit": "stay", "reason": "r", "reply": "Hello"}}


class QuietMemory(NullMemory):
    note = ""
    ready = True


def opened(store: Path, script: dict[str, Any] | None = None, graph_file: Path = CHECKIN) -> Opened:
    graph = load_graph(graph_file)
    chat = ScriptedModel(script or STAY)
    sessions = Sessions(store, model=chat, remember="background")
    return Opened(
        graph=graph,
        session=sessions.start(graph, user_id="ann"),
        opener=sessions,
        model_name="scripted",
        memory=cast(Any, QuietMemory()),
        store=store,
        user="ann",
    )


def run(run_on: Opened, text: str, *, jsonl: bool) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_lines(run_on, io.StringIO(text), out, err, jsonl=jsonl)
    return code, out.getvalue(), err.getvalue()


def test_one_parser_for_every_mode() -> None:
    assert commands.parse("/memory  walks ") == commands.Command("memory", "walks")
    assert commands.parse("  /quit") == commands.Command("quit")
    assert commands.parse("/quit").leaves and commands.parse("/exit").leaves  # type: ignore[union-attr]
    assert commands.parse("hello /state") is None
    assert commands.parse("/") is None
    assert parse_line("/state\n", jsonl=False) == commands.Command("state")
    assert parse_line("   \n", jsonl=False) is None
    assert parse_line("hi\n", jsonl=True) == Message("hi")
    assert parse_line('{"id": 7, "text": "hi"}', jsonl=True) == Message("hi", "7")
    assert parse_line('{"text": "/state"}', jsonl=True) == commands.Command("state")
    assert parse_line('{"id": 1, "text": "x"}', jsonl=False) == Message('{"id": 1, "text": "x"}')
    for bad in ('{"id": 1}', '{"text": 3}', '{"text": "x", "id": [1]}', "{not json"):
        with pytest.raises(ValueError):
            parse_line(bad, jsonl=True)


def test_piped_commands_never_reach_the_graph(tmp_path: Path) -> None:
    here = opened(tmp_path)
    text = "Hi\n/state\n/history\n/why\n/topology\n/sessions\n/memory\n/help\n/nonsense\n/stat\n"
    text += "/back\nHi\n/undo\n"
    code, out, err = run(here, text, jsonl=False)
    assert code == 0
    assert out.splitlines() == ["Hello", "Hello"]  # only the messages made turns
    assert "welcome_patient (action)" in err and "  objective: " in err
    assert "you: Hi" in err and "Ava: Hello" in err  # the agent by its name, as in a terminal
    assert "error: unknown command /nonsense — /help lists them" in err
    assert "error: unknown command /stat — did you mean /state? /help lists them" in err
    assert err.count("took back turn 1 (Hi); now in START") == 2  # /undo is /back
    assert here.session.view.turn_number == 0


def test_reset_starts_a_new_session_and_quit_stops_reading(tmp_path: Path) -> None:
    here = opened(tmp_path)
    first = here.session.id
    code, out, err = run(here, "Hi\n/reset\nHi again\n/quit\nnever sent\n", jsonl=True)
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line.get("command") for line in lines] == [None, "reset", None]
    assert lines[1]["session"] == here.session.id != first
    assert lines[2]["session"] == here.session.id and lines[2]["turn"] == 1
    assert "never sent" not in err + out


def test_a_line_after_end_is_not_sent_and_a_reset_starts_again(tmp_path: Path) -> None:
    ending = {
        "welcome_patient": [
            {"exit": "emergency", "reason": "the patient fainted"},
            {"exit": "stay", "reason": "r", "reply": "Hello"},
        ],
        **STAY,
    }
    here = opened(tmp_path, ending)
    first = here.session
    code, out, err = run(here, "I just fainted\nAre you there?\n/reset\nHi\n", jsonl=False)
    assert code == 0
    emergency, hello = out.splitlines()
    assert "911" in emergency and hello == "Hello"
    said = "error: line 2: the conversation reached END — /reset to start again; the line is"
    assert f"{said} not sent" in err
    assert first.view.turn_number == 1 and first.transcript[-1]["content"] == emergency
    assert here.session.id != first.id and here.session.view.turn_number == 1


def test_a_keyed_line_sent_again_after_end_prints_its_turn_and_a_new_one_is_not_sent(
    tmp_path: Path,
) -> None:
    here = opened(tmp_path, {"welcome_patient": {"exit": "emergency", "reason": "fainted"}})
    text = '{"id": "a", "text": "I just fainted"}\n{"id": "a", "text": "I just fainted"}\n'
    code, out, err = run(here, text + '{"id": "b", "text": "Hello?"}\n', jsonl=True)
    assert code == 0
    ended, again, refused = (json.loads(line) for line in out.splitlines())
    assert ended["completed"] and again == {**ended, "duplicate": True}  # a retry after a crash
    assert "error: line 3: the conversation reached END" in err and "line 2" not in err
    why = "the conversation reached END — /reset to start again; the line is not sent"
    assert refused == {"line": 3, "error": why, "id": "b"}  # a line back for each line
    assert here.session.view.turn_number == 1


def test_under_jsonl_a_command_answers_with_a_json_object(tmp_path: Path) -> None:
    here = opened(tmp_path)
    code, out, _ = run(here, "Hi\n/state\n/history\n/back\n/back\n", jsonl=True)
    assert code == 0
    turn, state, history, back, nothing = (json.loads(line) for line in out.splitlines())
    assert turn["reply"] == "Hello" and "command" not in turn
    assert state["command"] == "state" and state["state"] == "welcome_patient"
    assert state["exits"][0]["to"] == "medication_adherence_check"
    assert history == {
        "command": "history",
        "summary": "",
        "transcript": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
        ],
        "agent": "Ava",
    }
    assert back["taken"] == {"turn": 1, "user": "Hi"} and nothing["taken"] is None


def test_a_line_sent_again_with_its_id_is_not_a_second_turn(tmp_path: Path) -> None:
    here = opened(tmp_path)
    text = '{"id": "a1", "text": "Hi"}\n{"id": "a1", "text": "Hi"}\n{"id": "a2", "text": "Hi"}\n'
    code, out, _ = run(here, text, jsonl=True)
    assert code == 0
    first, again, other = (json.loads(line) for line in out.splitlines())
    assert first["id"] == "a1" and "duplicate" not in first and first["turn"] == 1
    assert again == {**first, "duplicate": True}
    assert other["id"] == "a2" and other["turn"] == 2
    assert [m["content"] for m in here.session.transcript] == ["Hi", "Hello", "Hi", "Hello"]


def test_a_bad_json_line_is_reported_and_skipped(tmp_path: Path) -> None:
    code, out, err = run(opened(tmp_path), '{"id": 1}\n{"text": 5}\nHi\n', jsonl=True)
    assert code == 0
    refused, unnamed, turn = (json.loads(line) for line in out.splitlines())
    why = 'a JSON line needs a string "text" (and may have an "id"); the line is skipped'
    assert refused == {"line": 1, "error": why, "id": "1"} and unnamed == {"line": 2, "error": why}
    assert turn["user"] == "Hi"
    assert 'error: line 1: a JSON line needs a string "text"' in err


def test_turn_objects_carry_the_fallback_and_the_warnings(tmp_path: Path) -> None:
    failing = {"*": {"raise": "the provider is down"}}
    code, out, _ = run(opened(tmp_path, failing), "Hi\n", jsonl=True)
    assert code == 0
    turn = json.loads(out)
    assert turn["fallback"] is True and turn["guard"] is None
    assert turn["warnings"] and "the provider is down" in turn["warnings"][0]


def test_plain_answers_of_every_command(tmp_path: Path) -> None:
    here = opened(tmp_path)
    for name in ("state", "topology", "why", "history", "memory", "sessions", "help"):
        found = plain(commands.answer(here, commands.Command(name)))
        assert found and not found[0].startswith("error"), name


def test_history_shows_the_summary_and_why_how_much_the_prompt_held(tmp_path: Path) -> None:
    from tests.unit.runtime.test_history import NAME, chat_graph

    here = opened(tmp_path / "store", graph_file=chat_graph(tmp_path, "summarize", tokens=100))
    text = NAME + "\n" + "".join(f"I had {n} apples on my table today.\n" for n in range(12))
    code, _, err = run(here, text + "/history\n/why\n", jsonl=False)
    assert code == 0
    assert f"summary: - The user said: {NAME}" in err
    assert "(the prompt held " in err and " messages and a summary)" in err


def test_why_names_each_step_by_its_states_type(tmp_path: Path) -> None:
    from tests.unit.runtime._runtime import action, simple, write

    note = (
        "  n:\n    type: annotation\n    objective: Note it.\n    annotations: [noted]\n"
        "    exit_conditions:\n      - {description: The user is done., next_state: END}\n"
        "      - {description: The user goes on., next_state: b}\n"
    )
    body = action("a", {"n": "The user says something."}) + note + action("b", {"END": "Bye."})
    script = {
        "a": [{"exit": "n", "reason": "said", "reply": ""}],
        "n": [{"exit": "b", "reason": "goes on"}],
        "b": [{"exit": "stay", "reason": "r", "reply": "Go on."}],
    }
    here = opened(tmp_path / "s", script, write(tmp_path, simple(body=body)))
    code, _, err = run(here, "Hello\n/why\n", jsonl=False)
    assert code == 0
    steps = [line.split(" → ")[0] for line in err.splitlines() if " → " in line]
    assert steps == [
        "START (start)",
        "a (action)",
        "n (annotation, asked as a decision)",
        "b (action)",
    ]
    assert "(the prompt held 1 message)" in err


def test_why_says_how_sure_each_choice_was_and_when_it_asked(tmp_path: Path) -> None:
    from tests.unit.runtime._runtime import action, go, simple, write

    body = action("a", {"b": "The user wants b.", "c": "The user wants c."})
    body += action("b", {"END": "Bye."}) + action("c", {"END": "Bye."})
    asked = {**go("clarify", "two fit", "b or c?"), "scores": {"b": 0.5, "c": 0.45}}
    took = {**go("b", "said b"), "scores": {"b": 0.875, "c": 0.125}}
    script = {"a": [asked, took], "b": [{"exit": "stay", "reason": "r", "reply": "B."}]}
    here = opened(tmp_path / "s", script, write(tmp_path, simple(body=body)))
    code, _, err = run(here, "one of them\n/why\nb please\n/why\n", jsonl=False)
    assert code == 0
    assert "a (action) → clarify (asked the user): two fit" in err
    assert "a (action) → b (confidence 0.88): said b" in err
    data = commands.answer(here, commands.Command("why")).data
    assert [(d["confidence"], d["asked"]) for d in data["decisions"]][-2:] == [
        (0.875, False),
        (None, False),
    ]


def test_state_says_when_an_exit_without_words_is_taken(tmp_path: Path) -> None:
    here = opened(tmp_path, graph_file=GRAPHS / "restaurant_reservation.yaml")
    exits = commands.answer(here, commands.Command("state")).data["exits"]
    assert [(e["to"], e["description"]) for e in exits] == [
        ("large_party", "when party_size > 12"),
        ("ask_time", "once its slots are filled, if no exit above holds"),
    ]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"id": "a", "text": "hi \\ud800"}', "the message holds a lone surrogate (U+D800) at"),
        ('{"id": "\\udfff", "text": "hi"}', "the id holds a lone surrogate (U+DFFF) at"),
        ("hi \udcff", "the message holds a byte that is not UTF-8 (0xff) at character 4"),
        ("hi \x00 there", "the message holds a NUL character at character 4"),
        ("/memory \ud83d", "the message holds a lone surrogate (U+D83D) at character 9"),
        ("x" * 8_001, "the message is 8,001 characters, over the 8,000 a message may hold"),
        ('{"id": true, "text": "hi"}', '"id" must be a string or an integer'),
    ],
)
def test_a_line_that_cannot_be_stored_is_refused_located_and_the_session_goes_on(
    tmp_path: Path, line: str, why: str
) -> None:
    here = opened(tmp_path)
    code, out, err = run(here, f"Hi\n{line}\nHi again\n", jsonl=True)
    assert code == 0
    hi, refused, again = (json.loads(shown) for shown in out.splitlines())
    assert (hi["user"], again["user"]) == ("Hi", "Hi again")
    echoed = {"id": "a"} if line.startswith('{"id": "a"') else {}  # a storable id only
    assert {k: v for k, v in refused.items() if k != "error"} == {"line": 2, **echoed}
    assert refused["error"].startswith(why) and refused["error"].endswith("; the line is skipped")
    assert f"error: line 2: {why}" in err and "the line is skipped" in err
    assert [m["content"] for m in here.session.transcript][::2] == ["Hi", "Hi again"]


HOSTILE_REPLY = "Hi\x1b]0;owned\x07\x1b[2J\r\nthere\u202e\x9b[31m \ud800 done"
READ = HOSTILE_REPLY.replace("\ud800", "\ufffd")  # a model's lone surrogate is a broken character


def test_a_reply_is_one_line_with_its_control_characters_escaped(tmp_path: Path) -> None:
    here = opened(tmp_path, {"*": {"exit": "stay", "reason": "r\x1b[2J", "reply": HOSTILE_REPLY}})
    code, out, err = run(here, "Hi\n/history\n/why\n", jsonl=False)
    assert code == 0
    escaped = "Hi\\x1b]0;owned\\x07\\x1b[2J\\r\\nthere\\u202e\\x9b[31m \ufffd done"
    assert out == escaped + "\n"  # the turn's one line, nothing acts on a terminal
    assert f"Ava: {escaped}" in err and "r\\x1b[2J" in err  # /history and /why too
    assert not any(c in out + err for c in "\x1b\r\x07\x9b\u202e\ud800")


def test_a_jsonl_line_holds_no_control_character_raw_and_reads_back_the_same(
    tmp_path: Path,
) -> None:
    here = opened(tmp_path, {"*": {"exit": "stay", "reason": "r", "reply": HOSTILE_REPLY}})
    code, out, _ = run(here, "Hi\n/history\n", jsonl=True)
    assert code == 0 and len(out.splitlines()) == 2
    assert not any(c in out for c in "\x1b\r\x07\x9b\u202e\ud800")
    turn, history = (json.loads(line) for line in out.splitlines())
    assert turn["reply"] == history["transcript"][1]["content"] == READ


class Crash(BaseException):
    """What a kill leaves behind: a turn begun and never finished."""


def test_a_recovered_turn_is_printed_with_the_id_its_line_was_sent_with(tmp_path: Path) -> None:
    graph = load_graph(CHECKIN)
    crashing = Session.start(graph, model=ScriptedModel({"*": Crash()}), store=tmp_path)
    with pytest.raises(Crash):
        crashing.send("Hi", key="m-17")
    sessions = Sessions(tmp_path, model=ScriptedModel(STAY), remember="background")
    session = sessions.resume(crashing.id, graph=graph)
    assert session.recovered is not None
    here = Opened(
        graph=graph,
        session=session,
        opener=sessions,
        model_name="scripted",
        memory=cast(Any, QuietMemory()),
        store=tmp_path,
        user="local",
    )
    code, out, err = run(here, "", jsonl=True)
    assert code == 0 and "recovered turn 1" in err
    (recovered,) = (json.loads(line) for line in out.splitlines())
    assert recovered["recovered"] is True and recovered["id"] == "m-17"


def test_sessions_lists_only_the_current_users_sessions(tmp_path: Path) -> None:
    graph = load_graph(CHECKIN)
    for user in ("bob", "bob"):
        Session.start(graph, model=ScriptedModel(STAY), user_id=user, store=tmp_path).send("Hi")
    here = opened(tmp_path)  # ann's
    code, out, _ = run(here, "Hi\n/sessions\n", jsonl=True)
    assert code == 0
    listed = json.loads(out.splitlines()[1])["sessions"]
    assert [(s["user"], s["session"], s["current"]) for s in listed] == [
        ("ann", here.session.id, True)
    ]
