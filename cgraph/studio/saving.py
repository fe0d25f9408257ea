"""A studio conversation saved as a conversation test: one case whose turns are the
messages sent, each expecting the path it went through and the state it ended in (END
and `completed` once the conversation was over), appended to a `*.test.yaml` file that
`cgraph test` runs. The file is checked after writing; a file that would not load is put
back as it was.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from cgraph.diagnostics import shown_path
from cgraph.errors import GraphError
from cgraph.serve.problems import Problem
from cgraph.session import Session, Turn
from cgraph.spec.limits import ReadLimits
from cgraph.spec.names import END
from cgraph.spec.testfile import TestFile, load_tests

SUFFIX = ".studio.test.yaml"
OFFLINE = (None, "semantic")
"""Models a test file need not name (its default is the offline mode)."""


def default_file(graph_file: Path) -> Path:
    """`tests/<graph>.studio.test.yaml` beside the graph (its folder without `tests/`)."""
    folder = graph_file.parent / "tests"
    return (folder if folder.is_dir() else graph_file.parent) / f"{graph_file.stem}{SUFFIX}"


def save(
    session: Session,
    graph_file: str,
    name: str,
    model: str | None,
    limits: ReadLimits | None = None,
) -> dict[str, Any]:
    """Append `session`'s conversation as case `name` (made unique in the file), the
    file read within `limits` (the studio's `--max-file-size`)."""
    turns = [t for t in session.log.turns() if t.user is not None]
    if not turns:
        raise Problem(422, "nothing_to_save", "send a message first: a case is the messages sent")
    target = default_file(Path(graph_file))
    before = target.read_text(encoding="utf-8") if target.exists() else None
    taken = [c.name for c in _tests(target, limits).cases] if before is not None else []
    name = _unique(name.strip() or "studio conversation", taken)
    head = before if before is not None else _header(target, Path(graph_file), model)
    _write(target, head.rstrip("\n") + "\n" + _case(name, turns), before, limits)
    shown = shown_path(target)
    return {
        "file": str(shown),
        "case": name,
        "turns": len(turns),
        "command": f"cgraph test {shown}",
    }


def _case(name: str, turns: list[Turn]) -> str:
    """The case as YAML items under `cases:` (indented two spaces)."""
    steps = []
    for turn in turns:
        expect: dict[str, Any] = {"state": END if turn.completed else turn.state}
        expect["path"] = list(turn.path)
        if turn.completed:
            expect["completed"] = True
        steps.append({"user": turn.user, "expect": expect})
    text = yaml.safe_dump(
        [{"name": name, "turns": steps}],
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=None,
        width=96,
    )
    return "".join(f"  {line}" if line.strip() else line for line in text.splitlines(True))


def _header(target: Path, graph_file: Path, model: str | None) -> str:
    graph = Path(os.path.relpath(graph_file.resolve(), target.parent.resolve())).as_posix()
    lines = [
        "# Conversations saved from cgraph studio: each case expects the path every turn went",
        f"# through and where it ended. Run them with `cgraph test {target.name}`.",
        "cgraph-test: 1",
        f"graph: {graph}",
    ]
    if model not in OFFLINE:
        lines.append(f"model: {model}")
    return "\n".join([*lines, "cases:"]) + "\n"


def _write(target: Path, text: str, before: str | None, limits: ReadLimits | None) -> None:
    """Write `text`, then load it as `cgraph test` does; put `before` back if it fails."""
    try:
        target.write_text(text, encoding="utf-8")
        _tests(target, limits)
    except (OSError, Problem) as err:
        if before is None:
            target.unlink(missing_ok=True)
        else:
            target.write_text(before, encoding="utf-8")
        said = err.message if isinstance(err, Problem) else str(err)
        raise Problem(422, "not_saved", f"could not save the case to {target}: {said}") from err


def _tests(target: Path, limits: ReadLimits | None) -> TestFile:
    try:
        return load_tests(target, limits)
    except GraphError as err:
        found = "; ".join(d.render() for d in err.diagnostics[:3])
        raise Problem(422, "not_saved", f"{target} is not a valid test file: {found}") from err


def _unique(name: str, taken: list[str]) -> str:
    number, candidate = 2, name
    while candidate in taken:
        candidate, number = f"{name} ({number})", number + 1
    return candidate
