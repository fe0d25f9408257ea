"""How the interactive `cgraph run` draws a slash command's answer (`/why`, `/state`, …).

`cgraph.cli.commands` answers a command as plain data, the same for a terminal and for
piped lines (`--jsonl`); here each answer is drawn for a person at a terminal, dimmed
where it is detail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape as markup_escape
from rich.table import Table

from cgraph.cli import commands
from cgraph.cli.shown import printable
from cgraph.runtime.state.records import certainty

Data = dict[str, Any]
NO_SCORE = "—"
# Offline, a global exit is weighed first and its score kept only when it is taken: an
# empty cell would read as forgotten, so the table says what happened.
UNSCORED = "a global exit not taken: the message was not close enough to it (kept only when taken)"


class Answers:
    """The drawings of the slash commands' answers on one console, by command name."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.drawings: dict[str, Callable[[Data], None]] = {
            "state": self.draw_state,
            "topology": self.draw_topology,
            "why": self.draw_why,
            "history": self.draw_history,
            "memory": self.draw_memory,
            "back": self.draw_back,
            "reset": lambda data: self.dim(f"new session {data['session']}"),
            "sessions": self.draw_sessions,
            "help": self.draw_help,
        }

    def dim(self, text: str) -> None:
        self.console.print(dimmed(text))

    def draw_help(self, data: Data) -> None:
        for name, text in data["commands"].items():
            self.console.print(f"  [bold]{escape(name.ljust(16))}[/] {escape(text)}")

    def draw_state(self, data: Data) -> None:
        kind = f" ({data['type']})" if data["type"] else ""
        self.console.print(f"[bold]{escape(data['state'])}[/]{escape(kind)}")
        if data["objective"] is None:
            return
        self.console.print(f"  objective: {escape(data['objective'])}")
        for exit_ in data["exits"]:
            self.console.print(f"  → {escape(exit_['to'])}: {escape(exit_['description'])}")

    def draw_topology(self, data: Data) -> None:
        here = data["state"]
        for line in data["topology"].splitlines():
            marked = line.rstrip().endswith(f"] {here}") and not line.startswith(" ")
            text = escape(line)
            self.console.print(f"[bold green]{text}   ◀ you are here[/]" if marked else text)

    def draw_why(self, data: Data) -> None:
        if not data["decisions"]:
            self.dim("no decision yet")
        for call in data["tool_calls"]:
            self.dim(f"  tool {commands.describe_call(call)}")
        for d in data["decisions"]:
            # A line of its own: as the table's title it would wrap to the table's width.
            chosen = f"{d['step']} → {d['chosen']}"
            self.console.print(
                f"[bold]{escape(chosen)}[/]{escape(certainty(d['confidence'], d['asked']))}"
            )
            self.draw_candidates(d["candidates"], d["scores"])
            extra = f" · prompt {d['prompt_hash']}" if d["prompt_hash"] else ""
            if d["prompt_hash"]:
                held = " and a summary" if d["summary"] else ""
                extra += f" · held {commands.messages(d['window'])}{held}"
            self.dim(f"  reason: {d['reason']} · model {d['model'] or '-'}{extra}")
        if data.get("metadata"):
            self.dim(f"reply metadata: {', '.join(data['metadata'])}")

    def draw_candidates(self, candidates: list[str], scores: dict[str, float]) -> None:
        """A table when there are scores to compare; else one line (a model's or a rule's
        choice has none, and a table of empty cells says nothing)."""
        if not any(scores.get(c) is not None for c in candidates):
            self.dim(f"  candidates: {', '.join(candidates)}")
            return
        table = Table()
        table.add_column("candidate")
        table.add_column("score", justify="right")
        for candidate in candidates:
            score = scores.get(candidate)
            table.add_row(escape(candidate), NO_SCORE if score is None else f"{score:.3f}")
        self.console.print(table)
        if any(scores.get(c) is None for c in candidates):
            self.dim(f"  {NO_SCORE} {UNSCORED}")

    def draw_history(self, data: Data) -> None:
        if data["summary"]:
            self.dim("summary of the earlier conversation:")
            for line in data["summary"].splitlines():
                self.dim(f"  {line}")
        for message in data["transcript"]:
            who = "you" if message["role"] == "user" else data["agent"]
            self.console.print(f"[bold]{escape(who)}:[/] {escape(message['content'])}")

    def draw_memory(self, data: Data) -> None:
        if data["note"]:
            self.dim(data["note"])
        if not data["memories"]:
            self.dim("no memories")
        for m in data["memories"]:
            score = f" {m['score']:.2f}" if m["score"] is not None else ""
            label = f"[{m['tier']}{score}]"
            self.console.print(f"  {escape(label)} {escape(m['text'])}")

    def draw_back(self, data: Data) -> None:
        taken = data["taken"]
        if taken is None:
            self.dim("nothing to undo")
            return
        self.dim(f"took back turn {taken['turn']} ({taken['user']}); now in {data['state']}")

    def draw_sessions(self, data: Data) -> None:
        table = Table("session", "user", "graph", "turn", "state", "done")
        for s in data["sessions"]:
            mark = " ◀" if s["current"] else ""
            done = "yes" if s["done"] else ""
            row = (s["session"] + mark, s["user"], s["graph"], str(s["turn"]), s["state"], done)
            table.add_row(*map(escape, row))
        self.console.print(table)


def escape(text: str) -> str:
    """Text from a model, a graph or a user as rich markup that prints it as it is: its
    brackets escaped, its control characters shown escaped (`cgraph.cli.shown`), its line
    breaks kept."""
    return markup_escape(printable(text, lines=True))


def dimmed(text: str) -> str:
    """`text` as dimmed markup, its own brackets escaped."""
    return f"[dim]{escape(text)}[/]"
