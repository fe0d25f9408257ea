"""History summaries and context strategies: what the prompt keeps of a long conversation."""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.backends.offline.summary import extractive
from cgraph.backends.store.memory import InMemorySessionStore
from cgraph.runtime.ask.prompts import SUMMARY_HEADING
from cgraph.runtime.state.records import Event
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, simple, stay, write

NAME = "My name is Ada Lovelace and I live in London."
FILLER = [
    "What is the weather like tomorrow?",
    "ok",
    "I would like a table for two at seven o'clock, near the window if possible.",
    "Tell me something about the history of the analytical engine and its designers.",
]


def chat_graph(tmp_path: Path, strategy: str, tokens: int = 300) -> Path:
    top = f"limits:\n  history: {{tokens: {tokens}, strategy: {strategy}}}\n"
    return write(tmp_path, simple(start="a", top=top, body=action("a", {"END": "bye"})))


def _conversation(session: Session, turns: int) -> None:
    session.send(NAME)
    for number in range(1, turns):
        session.send(f"{FILLER[number % len(FILLER)]} ({number})")


def _prompt_text(model: ScriptedModel) -> str:
    return "\n".join(m["content"] for m in model.requests_for("a")[-1].messages)


def test_a_sixty_turn_conversation_keeps_the_users_name_through_a_summary(
    tmp_path: Path,
) -> None:
    model = ScriptedModel({"a": stay("noted")})
    session = Session.start(chat_graph(tmp_path, "summarize"), model=model)
    _conversation(session, 60)
    last = model.requests_for("a")[-1].messages
    window = [m for m in last if m["role"] in ("user", "assistant")]
    assert all(NAME not in m["content"] for m in window)  # left the window long ago
    assert "Ada Lovelace" in _prompt_text(model)
    assert last[1]["role"] == "system" and last[1]["content"].startswith(SUMMARY_HEADING)
    summaries = [e.data for e in session.events() if e.kind == "summary"]
    assert summaries and {s["writer"] for s in summaries} == {"extractive"}
    assert "What is the weather" not in summaries[-1]["text"]  # questions state nothing
    decision = session.last_decisions[-1]
    assert decision.summary and 0 < decision.window < 2 * 60


def test_without_a_summary_the_window_loses_the_name(tmp_path: Path) -> None:
    model = ScriptedModel({"a": stay("noted")})
    session = Session.start(chat_graph(tmp_path, "window"), model=model)
    _conversation(session, 60)
    assert "Ada Lovelace" not in _prompt_text(model)
    assert not [e for e in session.events() if e.kind == "summary"]


def test_the_model_writes_the_summary_when_it_can(tmp_path: Path) -> None:
    model = ScriptedModel({"a": stay("noted"), "summary": {"summary": "The user is Ada (London)."}})
    session = Session.start(chat_graph(tmp_path, "summarize"), model=model)
    _conversation(session, 20)
    assert "The user is Ada (London)." in _prompt_text(model)
    asked = [r for r in model.requests if r.kind == "summary"]
    assert asked and NAME in asked[0].messages[-1]["content"]
    writers = {e.data["writer"] for e in session.events() if e.kind == "summary"}
    assert writers == {"scripted"}


def test_a_failed_model_summary_falls_back_to_the_users_statements(tmp_path: Path) -> None:
    model = ScriptedModel({"a": stay("noted"), "summary": "not json"})
    session = Session.start(chat_graph(tmp_path, "summarize"), model=model)
    _conversation(session, 20)
    assert "Ada Lovelace" in _prompt_text(model)
    errors = [e.data for e in session.events() if e.kind == "llm_error"]
    assert errors and errors[0]["kind"] == "summary"


def test_resume_shows_the_model_the_summary_it_was_shown(tmp_path: Path) -> None:
    path = chat_graph(tmp_path, "summarize")
    first = ScriptedModel({"a": stay("noted"), "summary": {"summary": "Ada, from London."}})
    session = Session.start(path, model=first, store=tmp_path / "store")
    _conversation(session, 20)
    before = _prompt_text(first)
    session.close()
    # A model that would now write another summary: the stored one is shown, not rewritten.
    second = ScriptedModel({"a": stay("noted"), "summary": {"summary": "Someone else."}})
    again = Session.resume(session.id, store=tmp_path / "store", model=second)
    again.send("One more thing.")
    shown = _prompt_text(second)
    assert "Ada, from London." in shown and "Someone else." not in shown
    assert before.split("\n")[1] in shown


def _two_states(tmp_path: Path, strategy: str) -> Path:
    body = action("a", {"b": "The user wants the next task."}) + action(
        "b", {"END": "bye"}, context=strategy
    )
    return write(tmp_path, simple(start="a", body=body))


def test_context_reset_starts_the_next_state_afresh(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("b")], "b": stay("fresh")})
    session = Session.start(_two_states(tmp_path, "reset"), model=model)
    session.send(NAME)
    session.send("Next task: book a table.")
    messages = model.requests_for("b")[-1].messages
    contents = [m["content"] for m in messages if m["role"] != "system"]
    assert contents == ["Next task: book a table."]
    assert not any(SUMMARY_HEADING in m["content"] for m in messages)


def test_context_reset_with_summary_keeps_the_facts(tmp_path: Path) -> None:
    model = ScriptedModel({"a": [stay("hi"), go("b")], "b": stay("fresh")})
    session = Session.start(_two_states(tmp_path, "reset_with_summary"), model=model)
    session.send(NAME)
    session.send("Next task: book a table.")
    messages = model.requests_for("b")[-1].messages
    contents = [m["content"] for m in messages if m["role"] != "system"]
    assert contents == ["Next task: book a table."]
    assert messages[1]["content"] == f"{SUMMARY_HEADING}\n- The user said: {NAME}"
    session.send("Thanks, and at eight please.")
    later = [m["content"] for m in model.requests_for("b")[-1].messages if m["role"] != "system"]
    assert later[0] == "Next task: book a table."  # the window grows again from the reset


def test_the_offline_summary_keeps_self_descriptions_longest() -> None:
    older = [{"role": "user", "content": NAME}] + [
        {"role": "user", "content": f"The weather was grey on day {n}."} for n in range(40)
    ]
    text = extractive("", older, budget=60)
    assert NAME in text and "day 39" in text and "day 0." not in text


class _Counting(InMemorySessionStore):
    """Counts the transcript's messages a session reads back from the store."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[tuple[int, int]] = []

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        self.read.append((start, end))
        return super().message_events(session_id, start, end)


def test_a_resume_reads_the_window_not_the_whole_conversation(tmp_path: Path) -> None:
    store, model = _Counting(), ScriptedModel({"a": stay("noted")})
    session = Session.start(chat_graph(tmp_path, "window"), model=model, store=store)
    _conversation(session, 60)
    before = _prompt_text(model)
    store.read.clear()
    again = Session.resume(session.id, store=store, model=model)
    [(start, end)] = store.read  # the window, read once: what a resume costs stays flat
    assert end == 120 and start > 0 and end - start < 40
    again.send("One more thing.")
    assert _prompt_text(model).split("\n")[1:3] == before.split("\n")[1:3]


def test_a_state_s_summary_prompt_tells_the_model_what_its_summary_keeps(
    tmp_path: Path,
) -> None:
    keep = "Keep only the user's name and city."
    body = action("a", {"b": "The user wants the next task."}) + action(
        "b", {"END": "bye"}, context="reset_with_summary", summary_prompt=keep
    )
    script = {"a": [stay("hi"), go("b")], "b": stay("fresh"), "summary": {"summary": "Ada."}}
    model = ScriptedModel(script)
    session = Session.start(write(tmp_path, simple(start="a", body=body)), model=model)
    session.send(NAME)
    session.send("Next task: book a table.")
    [asked] = [r for r in model.requests if r.kind == "summary"]
    instructions = asked.messages[0]["content"]
    assert keep in instructions and "greetings and small talk" not in instructions
    assert instructions.endswith('Answer with one JSON object: {"summary": "..."}.')
    assert model.requests_for("b")[-1].messages[1]["content"] == f"{SUMMARY_HEADING}\nAda."
