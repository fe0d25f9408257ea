"""`Rereader.read` gives what `read_text` gives (data, diagnostics, node lines and columns)
on every example graph and lint fixture, before and after edits of every kind, and reads
again only the part an edit touched."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from cgraph.spec.read import Document, read_text
from cgraph.spec.reread import Rereader
from tests.conftest import FIXTURES, GRAPHS
from tests.support.generated_graph import write

FILES = sorted(
    [*GRAPHS.glob("*.yaml"), *(FIXTURES / "lint").rglob("*.yaml"), *(FIXTURES / "lsp").glob("*")]
)
EDITS = ["x", " ", "\n", ":", '"', "#", "- ", "&a ", "\t", ""]
"""Typed at random places (the last: a character deleted)."""


def marks(node: yaml.Node | None, out: list[Any]) -> list[Any]:
    """Every node's kind, start and (for text, whose end lint reads) end line and column."""
    if node is None:
        return out
    end = (node.end_mark.line, node.end_mark.column) if isinstance(node, yaml.ScalarNode) else ()
    out.append((type(node).__name__, node.start_mark.line, node.start_mark.column, *end))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            marks(key, out)
            marks(value, out)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            marks(item, out)
    return out


def assert_same(text: str, reader: Rereader) -> Document:
    whole, again = read_text(text, "g.yaml"), reader.read(text, "g.yaml")
    assert again.data == whole.data
    assert again.diagnostics == whole.diagnostics
    assert marks(again.root, [])[1:] == marks(whole.root, [])[1:]  # the root's own: its first key
    for path in (("states",), ("name",), ("start",)):
        assert again.locate(path) == whole.locate(path)
    return again


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_reread_is_the_whole_read_before_and_after_edits(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    reader = Rereader()
    assert_same(text, reader)
    pick = random.Random(path.name)
    for _ in range(12):
        at, typed = pick.randrange(len(text) or 1), pick.choice(EDITS)
        edited = text[:at] + typed + text[at + (0 if typed else 1) :]
        assert_same(edited, reader)


def test_a_keystroke_reads_again_only_the_state_it_changed(tmp_path: Path) -> None:
    text = write(50, tmp_path).read_text(encoding="utf-8")
    reader = Rereader()
    before = reader.read(text, "g.yaml")
    at = text.index("next_state: s2\n") + len("next_state: s2")
    after = assert_same(text[:at] + "x" + text[at:], reader)
    old, new = (d.node_at(("states",)) for d in (before, after))
    assert isinstance(old, yaml.MappingNode) and isinstance(new, yaml.MappingNode)
    changed = [o[0].value for o, n in zip(old.value, new.value, strict=True) if o[1] is not n[1]]
    assert changed == ["s1"]
    assert after.data["states"]["s1"]["exit_conditions"][0]["next_state"] == "s2x"
    assert after.data["states"]["s2"] is before.data["states"]["s2"]


def test_a_new_line_moves_the_states_below_it(tmp_path: Path) -> None:
    text = write(20, tmp_path).read_text(encoding="utf-8")
    reader = Rereader()
    reader.read(text, "g.yaml")
    at = text.index("  s3:\n")
    assert_same(text[:at] + "\n" + text[at:], reader)


@pytest.mark.parametrize(
    "text",
    [
        "cgraph: 1\nname: a\nname: b\nstates:\n  s: {}\n  s: {}\n",
        "cgraph: 1\nstates:\n  a: &x {type: action}\n  b: *x\n",
        "cgraph: 1\nstates:\n\ta: 1\n",
        "cgraph: 1\n---\nname: x\n",
        'cgraph: 1\nname: "unclosed\nstates:\n  a: 1\n',
        "cgraph: 1\nstates:\n  on: {}\n  yes: 1\n",
        "# only a comment\n",
        "",
    ],
    ids=["duplicates", "anchors", "tab", "two-documents", "unclosed", "yaml11", "comment", "empty"],
)
def test_what_cannot_be_cut_reads_as_a_whole_read_does(text: str) -> None:
    reader = Rereader()
    assert_same(text, reader)
    assert_same(text + "\n", reader)
