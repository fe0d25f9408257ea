"""The docs' Markdown pages, read as the tests need them: links, headings, marked blocks.

A fenced block right after `<!-- graph: NAME.yaml -->` is a whole graph (it must lint
clean), after `<!-- test: NAME.test.yaml -->` a test file for it, after
`<!-- file: NAME -->` another file the page's graphs need (a tool's handler), and after
`<!-- runnable -->` commands (sh) or a program (python) that must run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

DOCS = ROOT / "docs"
MARK = re.compile(
    r"<!--\s*(graph|test|file|runnable)(?::\s*(\S+))?\s*-->\n```(\w+)\n(.*?)\n```", re.S
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    page: Path
    kind: str
    """`graph`, `test`, `file` or `runnable`."""
    name: str
    """The file name a graph or test block is saved as ("" for a runnable one)."""
    language: str
    text: str


def pages() -> list[Path]:
    """Every hand-written page (the generated ones exist only in a build)."""
    return sorted(p for p in DOCS.glob("**/*.md") if "gen" not in p.relative_to(DOCS).parts)


def blocks(page: Path) -> Iterator[Block]:
    for found in MARK.finditer(page.read_text(encoding="utf-8")):
        kind, name, language, text = found.groups()
        yield Block(page, kind, name or "", language, text)


def links(page: Path) -> Iterator[str]:
    """Every link and image target of a page, code blocks and inline code left out."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for found in LINK.finditer(text):
        yield found.group(1) or found.group(2)


def anchors(page: Path) -> set[str]:
    """The ids of a page's headings, as MkDocs' table of contents makes them, and `{#id}`s."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    found = set(re.findall(r"\{#([A-Za-z0-9_-]+)\}", text))
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        found.add(slug(heading))
    return found


def slug(heading: str) -> str:
    """Python-Markdown's `toc` slug: markup dropped, lower case, words joined by `-`."""
    text = re.sub(r"\{#[^}]*\}|\{[^}]*\}$", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("`", "")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)
