"""`cgraph run` without a terminal: one message per line on stdin, replies on stdout.

Replies (or, under `--jsonl`, one JSON object per turn) go to stdout; notes, warnings and
the output of slash commands go to stderr (under `--jsonl`, a command answers with a
JSON object that has a `command` key, on stdout). Under `--jsonl` a line may also be a
JSON object `{"id": ..., "text": ...}`: the id is stored with the turn, and a line sent
again with an id already answered prints that turn (`"duplicate": true`) instead of
making a second one — what a client needs to re-send safely after a crash.

A run resumed after a crash first prints the turn the crash left unfinished (finished
now), marked `"recovered": true`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from cgraph.cli import commands
from cgraph.cli.opening import Opened, banner
from cgraph.cli.shown import json_line, printable, printable_lines
from cgraph.errors import CgraphError
from cgraph.runtime.state.records import certainty
from cgraph.spec.limits import text_problem

if TYPE_CHECKING:
    from cgraph.runtime.state.records import Turn
    from cgraph.session import Session


@dataclass(frozen=True)
class Message:
    """One input line meant for the graph, with the client's idempotency key if any."""

    text: str
    key: str | None = None


def turn_json(turn: Turn, **marks: Any) -> dict[str, Any]:
    """One line of `--jsonl`: the turn, plus marks such as `recovered` or `id`."""
    return {**turn.as_json(), **marks}


def parse_line(raw: str, *, jsonl: bool) -> Message | commands.Command | None:
    """What one input line asks for: a message, a command, or nothing (a blank line).

    Raises `ValueError` for a JSON line that is not `{"text": str, "id"?: str|int}`, and
    for a line whose text or id cannot be stored (`cgraph.spec.limits.text_problem`: a
    lone surrogate, a byte that is not UTF-8, a NUL, too long): refused before it is kept.
    """
    line = raw.strip()
    if not line:
        return None
    message = _keyed(line) if jsonl and line.startswith("{") else Message(line)
    for what, text in (("message", message.text), ("id", message.key)):
        problem = text_problem(text) if text is not None else None
        if problem is not None:
            raise ValueError(f"the {what} {problem}")
    return commands.parse(message.text) or message


def _keyed(line: str) -> Message:
    try:
        data = json.loads(line)
    except ValueError as err:
        raise ValueError(f"not a JSON object ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise ValueError('a JSON line needs a string "text" (and may have an "id")')
    key = data.get("id")
    if key is not None and (not isinstance(key, (str, int)) or isinstance(key, bool)):
        raise ValueError('"id" must be a string or an integer')  # true is no 'True'
    return Message(data["text"], None if key is None else str(key))


def _id_of(line: str, jsonl: bool) -> str | None:
    """The id a refused line carries, when it is a JSON object with a readable one."""
    if not jsonl:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    key = data.get("id") if isinstance(data, dict) else None
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        return None
    return None if text_problem(str(key)) is not None else str(key)  # only a storable id


class LineRun:
    """The loop of stdin mode, writing to `out` and `err`."""

    def __init__(self, opened: Opened, out: TextIO, err: TextIO, *, jsonl: bool) -> None:
        self.opened, self.out, self.err, self.jsonl = opened, out, err, jsonl

    def run(self, lines: TextIO) -> int:
        self.greet()
        for number, raw in enumerate(lines, start=1):
            try:
                parsed = parse_line(raw, jsonl=self.jsonl)
            except ValueError as error:
                self.refuse(number, f"{error}; the line is skipped", _id_of(raw, self.jsonl))
                continue
            if isinstance(parsed, commands.Command):
                if parsed.leaves:
                    break
                self.command(parsed)
            elif parsed is not None:
                code = self.send(parsed, number)
                if code is not None:
                    return code
        return 0

    def greet(self) -> None:
        session = self.opened.session
        self.note(banner(self.opened.model_name))
        self.note(f"session {session.id}")
        for note in self.opened.notes:
            self.note(note)
        if session.dropped is not None:
            self.note(f"note: {session.dropped}")
        recovered = session.recovered
        if recovered is not None:
            self.note(
                f"recovered turn {recovered.number}: the last run stopped before replying to "
                f"{recovered.user!r}; its reply comes first — do not send that line again"
            )
            key = sent_with(session, recovered.number)
            self.show(recovered, recovered=True, **({"id": key} if key is not None else {}))
        if session.opening is not None:  # a graph that speaks first: its words come first
            self.show(session.opening)

    def send(self, message: Message, number: int) -> int | None:
        """Run the turn of line `number` and print it; an exit code when the run must stop."""
        session = self.opened.session
        done = session.log.with_key(message.key) if message.key is not None else None
        if done is not None:  # sent again after a crash: the turn exists already
            self.show(done, id=message.key, duplicate=True)
            return None
        if session.view.completed:  # as in a terminal; a later /reset starts again
            self.refuse(number, f"{commands.ENDED}; the line is not sent", message.key)
            return None
        try:
            turn = session.send(message.text, key=message.key, remember=False)
        except CgraphError as error:  # a broken store or script, a model's refusal
            self.note(f"error: {error.message}")
            return 1
        failure = self.opened.stop_reason()
        if failure:
            self.note(f"error: {failure}")
            return 1
        marks = {"id": message.key} if message.key is not None else {}
        self.show(turn, **marks)
        self.opened.warm_later_turns()
        session.remember()  # after the reply is out; the next reply never waits for it
        for warning in self.opened.warnings(turn):
            self.note(warning)
        return None

    def show(self, turn: Turn, **marks: Any) -> None:
        # One line per turn, so replies line up with messages: the reply's own line breaks
        # and control characters are written escaped (`cgraph.cli.shown`).
        line = json_line(turn_json(turn, **marks)) if self.jsonl else printable(turn.reply)
        self.out.write(line + "\n")
        self.out.flush()

    def refuse(self, number: int, why: str, key: str | None = None) -> None:
        """Line `number` is not sent: said on stderr and, under `--jsonl`, as a JSON line
        on stdout too, so a reader gets a line back for every line it wrote."""
        self.note(f"error: line {number}: {why}")
        if self.jsonl:
            marks = {"id": key} if key is not None else {}
            self.out.write(json_line({"line": number, "error": why, **marks}) + "\n")
            self.out.flush()

    def note(self, text: str) -> None:
        """Write `text` to stderr, each of its lines escaped (it may quote a model)."""
        for line in printable_lines(text):
            self.err.write(line + "\n")

    def command(self, command: commands.Command) -> None:
        answer = commands.answer(self.opened, command)
        if self.jsonl:
            self.out.write(json_line(answer.data) + "\n")
            self.out.flush()
            return
        for line in plain(answer):  # a line each: a message's own line breaks are escaped
            self.err.write(printable(line) + "\n")
        self.err.flush()


def sent_with(session: Session, number: int) -> str | None:
    """The key the message of turn `number` was sent with, if any (the latest such turn:
    an undone turn's number is used again)."""
    said = [e for e in session.log.events() if e.kind == "user_message" and e.turn == number]
    key = said[-1].data.get("key") if said else None
    return str(key) if key is not None else None


def run_lines(opened: Opened, lines: TextIO, out: TextIO, err: TextIO, *, jsonl: bool) -> int:
    """One user message (or slash command) per line; returns the exit code."""
    return LineRun(opened, out, err, jsonl=jsonl).run(lines)


# ----- commands as text -----------------------------------------------------------------------


def plain(answer: commands.Answer) -> list[str]:
    """A command's answer as lines of text (stdin mode without `--jsonl`)."""
    if answer.error is not None:
        return [f"error: {answer.error}"]
    draw = _PLAIN.get(answer.name)
    data = answer.data
    return draw(data) if draw else [json.dumps(data, ensure_ascii=False)]


def _state(data: dict[str, Any]) -> list[str]:
    head = data["state"] + (f" ({data['type']})" if data["type"] else "")
    if data["objective"] is None:
        return [head]
    exits = [f"  → {e['to']}: {e['description']}" for e in data["exits"]]
    return [head, f"  objective: {data['objective']}", *exits]


def _history(data: dict[str, Any]) -> list[str]:
    said = [
        f"{'you' if m['role'] == 'user' else data['agent']}: {m['content']}"
        for m in data["transcript"]
    ]
    summary = [f"summary: {line}" for line in data["summary"].splitlines()]
    return summary + said or ["no messages yet"]


def _back(data: dict[str, Any]) -> list[str]:
    taken = data["taken"]
    if taken is None:
        return ["nothing to undo"]
    return [f"took back turn {taken['turn']} ({taken['user']}); now in {data['state']}"]


def _memory(data: dict[str, Any]) -> list[str]:
    found = [f"[{m['tier']}] {m['text']}" for m in data["memories"]]
    return ([data["note"]] if data["note"] else []) + (found or ["no memories"])


def _sessions(data: dict[str, Any]) -> list[str]:
    rows = []
    for s in data["sessions"]:
        cells = [s["session"] + (" ◀" if s["current"] else ""), s["user"], s["graph"]]
        cells += [str(s["turn"]), s["state"], "done" if s["done"] else ""]
        rows.append("\t".join(cells).rstrip())
    return rows


def _why(data: dict[str, Any]) -> list[str]:
    return [_decision(d) for d in data["decisions"]] + _calls(data) or ["no decision yet"]


def _decision(d: dict[str, Any]) -> str:
    sure = certainty(d["confidence"], d["asked"])
    return f"{d['step']} → {d['chosen']}{sure}: {d['reason']}{_held(d)}"


def _calls(data: dict[str, Any]) -> list[str]:
    return [f"tool {commands.describe_call(call)}" for call in data.get("tool_calls", [])]


def _held(decision: dict[str, Any]) -> str:
    """How much conversation the decision's prompt held ("" when it asked no model)."""
    if not decision["prompt_hash"]:
        return ""
    summary = " and a summary" if decision["summary"] else ""
    return f" (the prompt held {commands.messages(decision['window'])}{summary})"


def _topology(data: dict[str, Any]) -> list[str]:
    return str(data["topology"]).splitlines()


def _reset(data: dict[str, Any]) -> list[str]:
    return [f"new session {data['session']}"]


def _help(data: dict[str, Any]) -> list[str]:
    return [f"{name.ljust(16)} {text}" for name, text in data["commands"].items()]


_PLAIN = {
    "state": _state,
    "topology": _topology,
    "why": _why,
    "history": _history,
    "memory": _memory,
    "back": _back,
    "reset": _reset,
    "sessions": _sessions,
    "help": _help,
}
