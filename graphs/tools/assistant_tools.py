"""Tools for the example graphs `assistant.yaml` and `research.yaml`.

Pure and safe: a fixed, in-memory set of files and a small topic index, so the example
runs offline and never touches the disk. A real deployment swaps in handlers that read a
workspace or call a search API; the graphs stay the same.
"""

from __future__ import annotations

import re
from typing import Any

FILES: dict[str, str] = {
    "README.md": "# Notes app\nA tiny notes app. Run `python main.py` to start it.\n",
    "main.py": "from config import settings\n\nprint(f\"Notes app on port {settings['port']}\")\n",
    "config.py": 'settings = {"port": 8080, "debug": False}\n',
    "notes.txt": "Buy milk.\nCall the dentist on Friday.\n",
}

_ORDINALS = {
    "first": 0,
    "1st": 0,
    "second": 1,
    "2nd": 1,
    "third": 2,
    "3rd": 2,
    "fourth": 3,
    "4th": 3,
    "last": -1,
}

TOPICS: dict[str, dict[str, Any]] = {
    "langgraph": {
        "summary": "LangGraph builds stateful agent workflows as graphs of nodes and edges, "
        "with checkpointing so a conversation can pause and resume.",
        "details": "Compared with LangChain, LangGraph adds explicit state, cycles and "
        "persistence; LangChain provides the model and tool building blocks it uses.",
        "example": "graph = StateGraph(State); graph.add_node('chat', chat); "
        "graph.add_edge(START, 'chat')",
    },
    "python web frameworks": {
        "summary": "Django (batteries included), Flask (minimal) and FastAPI (async, typed) "
        "are the most used Python web frameworks.",
        "details": "For beginners Flask is the gentlest start; Django suits larger sites with "
        "an admin and ORM; FastAPI suits typed JSON APIs.",
        "example": "@app.get('/') def home(): return {'hello': 'world'}  # FastAPI",
    },
    "context graphs": {
        "summary": "A context graph is a map of conversation states (action, decision, "
        "reflection, recall, annotation, side-effect) with exits between them.",
        "details": "Decision and reflection states see the abstract topology, so the agent "
        "knows where the conversation can go next.",
        "example": "START -> [A] welcome -> [D] triage -> [A] answer -> END",
    },
}


BACKUPS: dict[str, str] = {}
"""Backups made by `backup_file`, kept apart from the listing (the workspace stays fixed)."""


def backup_file(name: str) -> dict[str, Any]:
    """Copy a file to `<name>.bak`; the model calls it with a name from the listing."""
    if name not in FILES:
        raise LookupError(f"no file {name!r}; files are {', '.join(list_files())}")
    backup = f"{name}.bak"
    BACKUPS[backup] = FILES[name]
    return {"backup": backup, "bytes": len(FILES[name].encode())}


WORKSPACE = "notes"
"""The one workspace these tools reach; any other cannot be reached (`on_error`)."""


def list_files(workspace: str = WORKSPACE) -> list[str]:
    """The names of the files in the workspace, README first, as a listing shows them."""
    if workspace != WORKSPACE:
        raise ConnectionError(f"workspace {workspace!r} cannot be reached")
    return list(FILES)


def read_file(request: str, listed: list[str] | None = None) -> dict[str, str]:
    """Read the file a request names: by name ("read main.py") or by position in the
    last listing ("read the first one"). Raises `LookupError` when nothing matches."""
    name = resolve_file(request, listed or list_files())
    return {"name": name, "content": FILES[name]}


def resolve_file(request: str, listed: list[str]) -> str:
    text = request.lower()
    for name in FILES:
        if name.lower() in text:
            return name
    for word in re.findall(r"[a-z0-9]+", text):
        if word in _ORDINALS and listed:
            index = _ORDINALS[word]
            if index < len(listed):
                return listed[index]
    stems = {name.lower().rsplit(".", 1)[0]: name for name in FILES}
    for word in re.findall(r"[a-z0-9]+", text):
        if word in stems:
            return stems[word]
    raise LookupError(f"no file matches {request!r}; files are {', '.join(list_files())}")


def lookup_topic(query: str, topic: str = "") -> dict[str, str]:
    """Find what the topic index knows about a query, staying on `topic` for follow-ups
    ("how does it compare?", "give me code examples")."""
    text = query.lower()
    key = next((k for k in TOPICS if any(w in text for w in k.split())), None)
    if key is None and topic in TOPICS:
        key = topic
    if key is None:
        raise LookupError(f"nothing known about {query!r}")
    entry = TOPICS[key]
    if any(w in text for w in ("example", "code", "snippet")):
        answer = entry["example"]
    elif any(w in text for w in ("compare", "best", "which", "versus", "vs", "beginner")):
        answer = entry["details"]
    else:
        answer = entry["summary"]
    return {"topic": key, "answer": answer}
