"""The interactive side of `cgraph run`: a rich transcript, slash commands, line editing.

Each reply is followed (dimmed) by the states the turn went through and why. Ctrl-C while
a turn runs cancels that turn (the session drops it, nothing half-written stays); Ctrl-C
or Ctrl-D at the prompt leaves. The input history lives in the store folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cgraph.cli.run import Opened, banner, turn_warnings
from cgraph.errors import CgraphError, SessionCompleted
from cgraph.spec.model import exits_of
from cgraph.spec.names import END, bare

if TYPE_CHECKING:
    from cgraph.runtime.records import Turn

PROMPT = "you › "
HISTORY_FILE = "history"
HELP = {
    "/state": "the current state: objective and exits",
    "/topology": "the map of the graph, the current state marked",
    "/why": "the last turn's decisions: candidates, scores or reasons, prompt hash",
    "/history": "the conversation so far",
    "/memory [query]": "what is remembered about you (or what matches the query)",
    "/back": "undo the last turn",
    "/reset": "start a new session with this graph",
    "/sessions": "the sessions in the store",
    "/quit": "leave (Ctrl-D or Ctrl-C at the prompt too)",
    "/help": "this list",
}


class Repl:
    def __init__(self, opened: Opened, console: Console | None = None) -> None:
        self.opened = opened
        self.console = console or Console(highlight=False)
        self.commands: dict[str, Callable[[str], bool]] = {
            "/state": self.show_state,
            "/topology": self.show_topology,
            "/why": self.show_why,
            "/history": self.show_history,
            "/memory": self.show_memory,
            "/back": self.back,
            "/reset": self.reset,
            "/sessions": self.show_sessions,
            "/quit": lambda _: False,
            "/exit": lambda _: False,
            "/help": self.show_help,
        }

    @property
    def agent(self) -> str:
        return self.opened.graph.agent.name

    # ----- the loop ---------------------------------------------------------------------

    def loop(self) -> int:
        self._start_readline()
        self.greet()
        while True:
            try:
                line = input(PROMPT).strip()
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                break
            if not line:
                continue
            if line.startswith("/"):
                if not self.command(line):
                    break
                continue
            self.send(line)
            failure = self.opened.replay_failure()
            if failure:
                self.console.print(f"[bold red]replay failed:[/] {escape(failure)}")
                return 1
        self.console.print(f"[dim]session {self.opened.session.id} saved in {self.opened.store}; "
                           f"resume with --session {self.opened.session.id}[/]")  # fmt: skip
        return 0

    def greet(self) -> None:
        session = self.opened.session
        graph = self.opened.graph
        self.console.print(f"[bold]{escape(graph.name)}[/] — {escape(graph.description)}")
        self.console.print(f"[dim]{escape(banner(self.opened.model_name))}[/]")
        resumed = f", resumed at turn {session.turn_number}" if session.turn_number else ""
        self.console.print(f"[dim]session {session.id}{resumed} · /help for commands[/]")
        if session.recovered is not None:
            self.console.print("[dim]finished the turn the last run left unfinished:[/]")
            self.render(session.recovered)
        elif session.turn_number:
            last = session.last_turn
            if last is not None and last.reply:
                self.console.print(f"[bold cyan]{escape(self.agent)}:[/] {escape(last.reply)}")
        if session.completed:
            self.console.print("[dim]this session has reached END — /reset to start again[/]")

    def send(self, message: str) -> None:
        session = self.opened.session
        if session.completed:
            self.console.print("[yellow]the conversation has ended — /reset for a new one[/]")
            return
        try:
            with self.console.status(self._status(), spinner="dots"):
                turn = session.send(message)
        except KeyboardInterrupt:
            self.console.print("[yellow]turn cancelled[/] [dim](nothing was kept)[/]")
            return
        except SessionCompleted as err:
            self.console.print(f"[yellow]{escape(err.message)}[/]")
            return
        except CgraphError as err:
            self.console.print(f"[bold red]error:[/] {escape(err.message)}")
            return
        self.render(turn)
        for warning in turn_warnings(self.opened, turn):
            self.console.print(f"[dim yellow]  {escape(warning)}[/]")

    def _status(self) -> str:
        from cgraph.backends.embed import shared_embedder

        loading = self.opened.model_name == "semantic" and not shared_embedder().ready
        if loading or not self.opened.memory.ready:
            return "loading the embedding model…"
        return "thinking…"

    def render(self, turn: Turn) -> None:
        if turn.reply:
            self.console.print(f"[bold cyan]{escape(self.agent)}:[/] {escape(turn.reply)}")
        self.console.print(f"[dim]  {escape(' → '.join(turn.path) or turn.state)}[/]")
        for t in turn.transitions:
            self.console.print(f"[dim]    {escape(t.from_state)} → {escape(t.to_state)}: "
                               f"{escape(t.reason)}[/]")  # fmt: skip
        for m in turn.recalled:
            score = f"{m.score:.2f}" if m.score is not None else "?"
            self.console.print(f"[dim]    recalled ({m.tier}, {score}): {escape(m.text)}[/]")
        if turn.guard:
            self.console.print(f"[yellow]  stopped by the {turn.guard} guard[/]")
        if turn.completed:
            self.console.print("[dim]  the conversation reached END — /reset to start again[/]")

    # ----- slash commands ---------------------------------------------------------------

    def command(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, rest = line.partition(" ")
        handler = self.commands.get(name)
        if handler is None:
            self.console.print(f"[yellow]unknown command {escape(name)}[/] — /help lists them")
            return True
        try:
            return handler(rest.strip())
        except CgraphError as err:
            self.console.print(f"[bold red]error:[/] {escape(err.message)}")
            return True

    def show_help(self, _: str) -> bool:
        for name, text in HELP.items():
            self.console.print(f"  [bold]{escape(name.ljust(16))}[/] {escape(text)}")
        return True

    def show_state(self, _: str) -> bool:
        session = self.opened.session
        state = session.current_state()
        self.console.print(f"[bold]{escape(session.state)}[/]"
                           + (f" ({state.type})" if state else ""))  # fmt: skip
        if state is None:
            return True
        self.console.print(f"  objective: {escape(state.objective)}")
        for condition in exits_of(state):
            self.console.print(
                f"  → {escape(condition.next_state)}: {escape(condition.description)}"
            )
        return True

    def show_topology(self, _: str) -> bool:
        from cgraph.spec.topology import derive

        here = bare(self.opened.session.state)
        for line in derive(self.opened.session.current_graph).splitlines():
            marked = line.rstrip().endswith(f"] {here}") and not line.startswith(" ")
            text = escape(line)
            self.console.print(f"[bold green]{text}   ◀ you are here[/]" if marked else text)
        return True

    def show_why(self, _: str) -> bool:
        decisions = self.opened.session.last_decisions
        if not decisions:
            self.console.print("[dim]no decision yet[/]")
        for d in decisions:
            table = Table(title=f"{d.state} ({d.kind}) → {d.chosen}", title_justify="left")
            table.add_column("candidate")
            table.add_column("score", justify="right")
            for candidate in d.candidates:
                score = d.scores.get(candidate)
                table.add_row(candidate, "" if score is None else f"{score:.3f}")
            self.console.print(table)
            extra = f" · prompt {d.prompt_hash}" if d.prompt_hash else ""
            self.console.print(f"[dim]  reason: {escape(d.reason)} · model {d.model or '-'}"
                               f"{extra}[/]")  # fmt: skip
        return True

    def show_history(self, _: str) -> bool:
        for message in self.opened.session.transcript:
            who = "you" if message["role"] == "user" else self.agent
            self.console.print(f"[bold]{escape(who)}:[/] {escape(message['content'])}")
        return True

    def show_memory(self, query: str) -> bool:
        found = self.opened.session.memories(query or None)
        if self.opened.memory.note:
            self.console.print(f"[dim]{escape(self.opened.memory.note)}[/]")
        if not found:
            self.console.print("[dim]no memories[/]")
        for m in found:
            score = f" {m.score:.2f}" if m.score is not None else ""
            self.console.print(f"  {escape(f'[{m.tier}{score}]')} {escape(m.text)}")
        return True

    def back(self, _: str) -> bool:
        taken = self.opened.session.undo()
        if taken is None:
            self.console.print("[dim]nothing to undo[/]")
            return True
        self.console.print(f"[dim]took back turn {taken.number} ({escape(taken.user)}); "
                           f"now in {escape(self.opened.session.state)}[/]")  # fmt: skip
        return True

    def reset(self, _: str) -> bool:
        session = self.opened.reset()
        self.console.print(f"[dim]new session {session.id}[/]")
        return True

    def show_sessions(self, _: str) -> bool:
        from cgraph.runtime.session import Session

        table = Table("session", "user", "graph", "turn", "state", "done")
        for info in Session.list_sessions(self.opened.store):
            mark = " ◀" if info.id == self.opened.session.id else ""
            done = "yes" if info.completed or info.state == END else ""
            table.add_row(info.id + mark, info.user_id, info.graph_name, str(info.turn),
                          info.state, done)  # fmt: skip
        self.console.print(table)
        return True

    # ----- line editing -----------------------------------------------------------------

    def _start_readline(self) -> None:
        try:
            import readline
        except ImportError:  # not on every platform; input() still works
            return
        path = Path(self.opened.store) / HISTORY_FILE
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
        readline.set_history_length(1000)
        import atexit

        atexit.register(self._save_history, readline, path)

    @staticmethod
    def _save_history(readline: object, path: Path) -> None:
        with contextlib.suppress(OSError):
            readline.write_history_file(str(path))  # type: ignore[attr-defined]
