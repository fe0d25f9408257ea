"""An editor's lint, which keeps each state's results between keystrokes
(`cgraph.spec.kept`), says exactly what a fresh whole lint of the same text says, over a
seeded series of edits to every example graph: typed characters, renamed and misspelt
names, deleted, doubled and moved lines."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from cgraph.lint.walk import lint_paths
from cgraph.spec.kept import Kept
from tests.conftest import GRAPHS
from tests.support.generated_graph import write

EXAMPLES = sorted(GRAPHS.glob("*.yaml"))
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def edited(text: str, pick: random.Random) -> str:
    lines = text.split("\n")
    at = pick.randrange(len(lines))
    kind = pick.randrange(6)
    if kind == 0:  # a character typed or deleted
        where = pick.randrange(len(text) or 1)
        typed = pick.choice(["x", " ", "\n", ":", "#", "- ", "{{ ", ""])
        return text[:where] + typed + text[where + (0 if typed else 1) :]
    if kind == 1:
        del lines[at]
    elif kind == 2:
        lines.insert(at, lines[pick.randrange(len(lines))])
    elif kind == 3:
        lines.insert(pick.randrange(len(lines)), lines.pop(at))
    else:  # a name changed to another name of the file, or misspelt
        words = _WORD.findall(text)
        found = list(_WORD.finditer(lines[at]))
        if not found or not words:
            return text
        word = pick.choice(found)
        new = pick.choice(words) if kind == 4 else word.group() + "x"
        lines[at] = lines[at][: word.start()] + new + lines[at][word.end() :]
    return "\n".join(lines)


def assert_series(path: Path, edits: int, seed: str) -> None:
    key, original = path.resolve(), path.read_text(encoding="utf-8")
    kept, pick, text = Kept(), random.Random(seed), original
    for _ in range(edits):
        text = original if pick.random() < 0.25 else edited(text, pick)
        again = lint_paths([path], texts={key: text}, kept=kept)
        whole = lint_paths([path], texts={key: text})
        assert again.diagnostics == whole.diagnostics, text
        assert again.files == whole.files


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_a_kept_lint_is_a_whole_lint_after_every_edit(path: Path) -> None:
    assert_series(path, 40, path.name)


def test_a_big_graph_after_every_edit(tmp_path: Path) -> None:
    assert_series(write(200, tmp_path), 40, "big")
