"""Slash commands: one parser and one set of answers for the REPL and for stdin.

Each command answers with plain data (`Answer`); the REPL draws it with rich, stdin mode
writes it as text on stderr or, under `--jsonl`, as a JSON object with a `command` key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cgraph.errors import CgraphError
from cgraph.runtime.state.records import step_name
from cgraph.spec.load import closest
from cgraph.spec.model import AnyState, ExitCondition, exits_of
from cgraph.spec.names import END, bare

if TYPE_CHECKING:
    from cgraph.cli.opening import Opened

HELP = {
    "/state": "the current state: objective and exits",
    "/topology": "the map of the graph, the current state marked",
    "/why": "the last turn's decisions: candidates, scores or reasons, prompt hash",
    "/history": "the conversation so far",
    "/memory [query]": "what is remembered about you (or what matches the query)",
    "/back": "undo the last turn (also /undo)",
    "/reset": "start a new session with this graph",
    "/sessions": "your sessions in the store",
    "/quit": "leave (Ctrl-D or Ctrl-C at the prompt too)",
    "/help": "this list",
}
ENDED = "the conversation reached END — /reset to start again"
"""Said once a session is complete: after its last reply, on resuming it, and to a message
sent after it (in a terminal and on stdin)."""
LEAVE = ("quit", "exit")
ALIASES = {"undo": "back"}
"""Other names people type for a command."""


@dataclass(frozen=True)
class Command:
    """A parsed slash command: `/memory dog` is `Command("memory", "dog")`."""

    name: str
    argument: str = ""

    @property
    def leaves(self) -> bool:
        return self.name in LEAVE


@dataclass(frozen=True)
class Answer:
    """What a command found, as JSON-able data (`data["command"]` names the command)."""

    data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.data["command"])

    @property
    def error(self) -> str | None:
        found = self.data.get("error")
        return str(found) if found is not None else None


def parse(line: str) -> Command | None:
    """The command a line holds, or None when it is a message for the graph."""
    text = line.strip()
    if not text.startswith("/") or text == "/":
        return None
    name, _, rest = text[1:].partition(" ")
    return Command(ALIASES.get(name, name), rest.strip())


def answer(opened: Opened, command: Command) -> Answer:
    """Run a command that stays (not /quit); unknown ones answer with an error."""
    run = _COMMANDS.get(command.name)
    if run is None:
        known = [*_COMMANDS, *LEAVE]
        close = closest(command.name, known)
        meant = f"did you mean /{close}? " if close else ""
        return _answer(command, error=f"unknown command /{command.name} — {meant}/help lists them")
    try:
        return _answer(command, **run(opened, command.argument))
    except CgraphError as err:  # a store or memory failure: the run goes on
        return _answer(command, error=err.message)


def _answer(command: Command, **data: Any) -> Answer:
    return Answer({"command": command.name, **data})


def state(opened: Opened, _: str) -> dict[str, Any]:
    view = opened.session.view
    spec = view.current_state
    if spec is None:
        return {"state": view.state, "type": None, "objective": None, "exits": []}
    found = exits_of(spec)
    exits = [{"to": c.next_state, "description": c.shown or _bare(spec, found)} for c in found]
    return {"state": view.state, "type": spec.type, "objective": spec.objective, "exits": exits}


def _bare(state: AnyState, exits: tuple[ExitCondition, ...]) -> str:
    """When an exit with neither words nor `when` is taken."""
    if state.collect:
        return "once its slots are filled" + (", if no exit above holds" if len(exits) > 1 else "")
    return "otherwise" if len(exits) > 1 else "always"


def topology(opened: Opened, _: str) -> dict[str, Any]:
    from cgraph.spec.topology import derive

    view = opened.session.view
    return {"state": bare(view.state), "topology": derive(view.current_graph)}


def why(opened: Opened, _: str) -> dict[str, Any]:
    session = opened.session
    last, view = session.log.last_turn(), session.view
    decisions = []
    for d in session.log.decisions():
        spec = view.state_spec(d.state)
        type_ = spec.type if spec is not None else None
        shown = {"type": type_, "step": step_name(d, type_), "confidence": d.confidence}
        decisions.append({**d.model_dump(mode="json"), **shown, "asked": d.asked})
    return {
        "decisions": decisions,
        "tool_calls": [dict(call) for call in last.tool_calls] if last else [],
        "metadata": list(last.metadata) if last is not None else [],
    }


def messages(count: int) -> str:
    return f"{count} message" + ("" if count == 1 else "s")


def history(opened: Opened, _: str) -> dict[str, Any]:
    view = opened.session.view
    agent = opened.graph.agent.name
    return {"summary": view.summary, "transcript": list(view.transcript), "agent": agent}


def memory(opened: Opened, query: str) -> dict[str, Any]:
    found = opened.session.memories(query or None)
    memories = [{"id": m.id, "tier": m.tier, "score": m.score, "text": m.text} for m in found]
    return {"query": query, "memories": memories, "note": opened.memory.note}


def back(opened: Opened, _: str) -> dict[str, Any]:
    taken = opened.session.undo()
    if taken is None:
        return {"taken": None, "state": opened.session.view.state}
    took = {"turn": taken.number, "user": taken.user}
    return {"taken": took, "state": opened.session.view.state}


def reset(opened: Opened, _: str) -> dict[str, Any]:
    return {"session": opened.reset().id}


def sessions(opened: Opened, _: str) -> dict[str, Any]:
    found = [
        {
            "session": info.id,
            "user": info.user_id,
            "graph": info.graph_name,
            "turn": info.turn,
            "state": info.state,
            "done": info.completed or info.state == END,
            "current": info.id == opened.session.id,
        }
        for info in opened.opener.list(opened.session.user_id)
    ]
    return {"sessions": found}


def help_(_: Opened, __: str) -> dict[str, Any]:
    return {"commands": HELP}


_COMMANDS = {
    "state": state,
    "topology": topology,
    "why": why,
    "history": history,
    "memory": memory,
    "back": back,
    "reset": reset,
    "sessions": sessions,
    "help": help_,
}


def describe_call(call: dict[str, Any]) -> str:
    """One model tool call in words: `count_files({"folder": "docs"}) done in 0.01s → …`."""
    arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
    outcome = call.get("error") if call["status"] != "done" else json.dumps(call.get("result"))
    took = f" in {call.get('duration', 0):g}s" if call["status"] != "refused" else ""
    return f"{call['tool']}({arguments}) {call['status']}{took} → {outcome}"
