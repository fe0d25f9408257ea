"""The interactive side of `cgraph run`: a rich transcript, slash commands, line editing.

Each reply is followed (dimmed) by the states the turn went through and why. Ctrl-C while
a turn runs cancels that turn (the session drops it, nothing half-written stays); Ctrl-C
or Ctrl-D at the prompt leaves. The input history lives in the store folder.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.status import Status

from cgraph.cli import commands
from cgraph.cli.answers import Answers, dimmed, escape
from cgraph.cli.opening import SEMANTIC, Opened, banner
from cgraph.errors import CgraphError, SessionCompleted
from cgraph.runtime.ask.streaming import CallingTools, Chunk, Retracted
from cgraph.spec.limits import text_problem

if TYPE_CHECKING:
    from cgraph.runtime.state.records import Turn

PROMPT = "you › "
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
HISTORY_FILE = "history"
Data = dict[str, Any]


class Repl:
    """The read-eval-print loop of an interactive `cgraph run`."""

    def __init__(self, opened: Opened, console: Console | None = None) -> None:
        self.opened = opened
        self.console = console or Console(highlight=False)
        self.answers = Answers(self.console)
        """How a slash command's answer is drawn (`cgraph.cli.answers`)."""

    @property
    def agent(self) -> str:
        return self.opened.graph.agent.name

    def dim(self, text: str) -> None:
        self.console.print(dimmed(text))

    # ----- the loop ---------------------------------------------------------------------

    def loop(self) -> int:
        """Read lines until /quit, Ctrl-D or Ctrl-C; returns the exit code."""
        history = self._start_readline()
        try:
            return self._loop()
        finally:
            if history is not None:
                history()

    def _loop(self) -> int:
        self.greet()
        while True:
            try:
                line = input(PROMPT).strip()
            except (EOFError, KeyboardInterrupt):
                self.console.print()
                break
            if not self.take(line):
                break
            failure = self.opened.stop_reason()
            if failure:
                self.console.print(f"[bold red]error:[/] {escape(failure)}")
                return 1
        session = self.opened.session.id
        self.dim(f"session {session} saved in {self.opened.store}; resume with --session {session}")
        return 0

    def take(self, line: str) -> bool:
        """Act on one typed line (a message or a command); False when it leaves."""
        problem = text_problem(line)
        if problem is not None:  # a byte that is not UTF-8, a NUL: never kept, never sent
            self.console.print(f"[bold red]error:[/] the message {escape(problem)}; not sent")
            return True
        command = commands.parse(line)
        if command is not None and command.leaves:
            return False
        if command is not None:
            self.command(command)
        elif line:
            self.send(line)
        return True

    def greet(self) -> None:
        session = self.opened.session
        graph = self.opened.graph
        self.console.print(f"[bold]{escape(graph.name)}[/] — {escape(graph.description)}")
        self.dim(banner(self.opened.model_name))
        for note in self.opened.notes:
            self.dim(note)
        view = session.view
        earlier = bool(view.turn_number) and session.opening is None
        resumed = f", resumed at turn {view.turn_number}" if earlier else ""
        self.dim(f"session {session.id}{resumed} · /help for commands")
        if session.dropped is not None:
            self.dim(session.dropped)
        if session.recovered is not None:
            self.dim("finished the turn the last run left unfinished:")
            self.render(session.recovered)
        elif view.turn_number:
            last = session.log.last_turn()
            if last is not None and last.reply:
                self.console.print(f"[bold cyan]{escape(self.agent)}:[/] {escape(last.reply)}")
        if view.completed:
            self.dim(f"  {commands.ENDED}")

    def send(self, message: str) -> None:
        session = self.opened.session
        view = session.view
        if view.completed:
            self.console.print(f"[yellow]{commands.ENDED}[/]")
            return
        printer = ReplyPrinter(self.console, self.agent)
        try:
            if self.opened.model_name != SEMANTIC and view.streams:
                turn = session.send_streaming(message, printer, remember=False)
            else:
                with late_status(self.console, self._status()):
                    turn = session.send(message, remember=False)
        except KeyboardInterrupt:
            printer.close()
            self.console.print("[yellow]turn cancelled[/] [dim](nothing was kept)[/]")
            return
        except SessionCompleted as err:
            self.console.print(f"[yellow]{escape(err.message)}[/]")
            return
        except CgraphError as err:
            printer.close()
            self.console.print(f"[bold red]error:[/] {escape(err.message)}")
            return
        printer.close()
        self.render(turn, shown=printer.shown)
        self.opened.warm_later_turns()
        session.remember()  # while the user types; the next reply never waits for it
        for warning in self.opened.warnings(turn):
            self.console.print(f"[dim yellow]  {escape(warning)}[/]")

    def _status(self) -> str:
        from cgraph.backends.embed import shared_embedder

        embedder = shared_embedder(self.opened.graph.embedding_source())
        loading = self.opened.model_name == SEMANTIC and not embedder.ready
        if loading or not self.opened.memory.ready:
            return "loading the embedding model…"
        return "thinking…"

    def render(self, turn: Turn, shown: str = "") -> None:
        """The reply, then (dimmed) the path and moves, in one print: rich lays out each
        print on its own, a millisecond or two of a turn."""
        lines: list[str] = []
        if shown and shown == turn.reply:
            pass  # already printed as the model wrote it
        elif turn.reply and self._is_stage_direction(turn):
            lines.append(dimmed(f"({self.agent}: {stage_direction(turn.reply)})"))
        elif turn.reply:
            lines.append(f"[bold cyan]{escape(self.agent)}:[/] {escape(turn.reply)}")
        lines.append(dimmed(f"  {' → '.join(turn.path) or turn.state}"))
        for t in turn.transitions:
            lines.append(dimmed(f"    {t.from_state} → {t.to_state}: {t.reason}"))
        for m in turn.recalled:
            score = f"{m.score:.2f}" if m.score is not None else "?"
            lines.append(dimmed(f"    recalled ({m.tier}, {score}): {m.text}"))
        if turn.guard:
            lines.append(f"[yellow]  {guard_verb(turn)} by the {turn.guard} guard[/]")
        if turn.completed:
            lines.append(dimmed(f"  {commands.ENDED}"))
        self.console.print("\n".join(lines))

    def _is_stage_direction(self, turn: Turn) -> bool:
        """Offline, a state without `say:` "speaks" its actions: instructions, not words."""
        if self.opened.model_name != SEMANTIC or turn.fallback or turn.completed:
            return False
        state = self.opened.session.view.current_state
        return state is not None and not state.say and bool(state.actions)

    # ----- slash commands ---------------------------------------------------------------

    def command(self, command: commands.Command) -> None:
        answer = commands.answer(self.opened, command)
        drawings = self.answers.drawings
        if answer.error is not None and command.name not in drawings:
            self.console.print(f"[yellow]{escape(answer.error)}[/]")
        elif answer.error is not None:
            self.console.print(f"[bold red]error:[/] {escape(answer.error)}")
        else:
            drawings[answer.name](answer.data)

    # ----- line editing -----------------------------------------------------------------

    def _start_readline(self) -> Callable[[], None] | None:
        """Load the input history; returns what saves it (the run ends without atexit)."""
        try:
            import readline
        except ImportError:  # not on every platform; input() still works
            return None
        path = Path(self.opened.store) / HISTORY_FILE
        with contextlib.suppress(OSError):
            readline.read_history_file(path)
        readline.set_history_length(1000)

        def save() -> None:
            with contextlib.suppress(OSError):
                readline.write_history_file(str(path))

        return save


SPINNER_AFTER = 0.15
"""Seconds before a spinner shows: a quicker step shows none (starting and stopping one
costs a thread and a redraw per step)."""


@contextlib.contextmanager
def late_status(console: Console, text: str) -> Iterator[None]:
    """A spinner with `text` while the block runs, shown only once it runs `SPINNER_AFTER`."""
    lock, done = threading.Lock(), threading.Event()
    shown: list[Status] = []

    def start() -> None:
        with lock:
            if not done.is_set():
                shown.append(console.status(text, spinner="dots"))
                shown[0].start()

    timer = threading.Timer(SPINNER_AFTER, start)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            done.set()
            for status in shown:
                status.stop()


def guard_verb(turn: Turn) -> str:
    """A guard that took its `on_limit` route "routed" the turn; any other "stopped" it."""
    route = f"on limit {turn.guard}"
    return "routed" if any(t.description == route for t in turn.transitions) else "stopped"


def stage_direction(actions: str) -> str:
    """ "Greet the customer. Ask what happened." → "greet the customer; ask what happened"."""
    steps = [s.strip().rstrip(".") for s in _SENTENCE_END.split(actions) if s.strip()]
    return "; ".join(s[:1].lower() + s[1:] for s in steps)


_RETRACTED = {
    False: "that answer was rejected; asking the model again",
    True: "the model failed before finishing that answer; it is withdrawn",
}


class ReplyPrinter:
    """Prints a streamed reply as it arrives; a rejected one is marked, not left standing."""

    def __init__(self, console: Console, agent: str) -> None:
        self.console, self.agent = console, agent
        self.shown = ""
        """The reply printed so far (the last one, after a rejected answer)."""
        self._open = False
        self._status: Status | None = None

    def _quiet(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __call__(self, chunk: Chunk) -> None:
        self._quiet()
        if isinstance(chunk, CallingTools):
            self.close()
            names = ", ".join(dict.fromkeys(chunk.names))
            self._status = self.console.status(f"[dim](calling {escape(names)}…)[/]")
            self._status.start()  # transient: gone when the answer starts
            return
        if isinstance(chunk, Retracted):
            self.close()
            self.shown = ""
            self.console.print(f"[yellow]({_RETRACTED[chunk.failed]})[/]")
            return
        if not self._open:
            self.console.print(f"[bold cyan]{escape(self.agent)}:[/] ", end="")
            self._open = True
        self.console.print(escape(chunk.text), end="", soft_wrap=True)
        self.shown += chunk.text

    def close(self) -> None:
        """End the line of a reply that was being printed (or a tool's status line)."""
        self._quiet()
        if self._open:
            self.console.print()
            self._open = False
