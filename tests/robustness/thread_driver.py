"""A program that embeds cgraph and runs a session whose tool is `isolation: thread`.

`python -m tests.robustness.thread_driver FOLDER SESSION` reads one message a line on
stdin and prints each turn as one JSON line (`Turn.as_json()`), as an application using
the library would; started again with the same SESSION it resumes the session (finishing
a turn a kill left unfinished, printed first and marked `recovered`). The model is
scripted: at the start of a turn it leaves for the side-effect state that calls the
tool, and once the tool has run it stays and lets the state's `say:` speak.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import SessionNotFound
from cgraph.runtime.ports import LLMRequest
from cgraph.session import Session

REPLIED = ("done", "failed")


class TurnModel:
    """The first question of a turn leaves for `call`; any later one stays."""

    def __init__(self) -> None:
        self.started = False

    def __call__(self, request: LLMRequest) -> dict[str, Any]:
        if not self.started:
            self.started = True
            return {"exit": "call", "reason": "the user asks", "reply": ""}
        return {"exit": "stay", "reason": "the tool has run", "reply": "(said)"}


def main(folder: Path, session_id: str) -> None:
    sys.stdout = sys.stderr  # what a handler prints is not this program's output
    turns = TurnModel()
    model = ScriptedModel({"*": turns})
    store = folder / "store"
    try:
        session = Session.resume(session_id, store=store, model=model, finish=False)
    except SessionNotFound:
        session = Session.start(
            folder / "graph.yaml", model=model, store=store, session_id=session_id
        )
    if session.view.interrupted is not None:
        # A turn begun in a replying state still has its first question to ask; one killed
        # after its tool ran (the state it replies from reached) has asked it already.
        turns.started = session.state not in REPLIED or _tool_ran(session)
        show(session.finish_turn().as_json(), recovered=True)
    for line in sys.stdin:
        turns.started = session.state not in REPLIED  # a new session begins at `call`
        show(session.send(line.strip()).as_json())
    session.close()


def _tool_ran(session: Session) -> bool:
    """Whether the unfinished turn already holds its tool call's outcome."""
    events = session.events()
    begun = max(i for i, e in enumerate(events) if e.kind == "user_message")
    return any(
        e.kind == "tool_call" and e.data.get("status") in ("done", "failed") for e in events[begun:]
    )


def show(data: dict[str, Any], **marks: Any) -> None:
    sys.__stdout__.write(json.dumps({**data, **marks}) + "\n")  # type: ignore[union-attr]
    sys.__stdout__.flush()  # type: ignore[union-attr]


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
