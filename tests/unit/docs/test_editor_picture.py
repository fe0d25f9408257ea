"""The language server's picture (`docs/img/editor.svg`, taken by `docs/gen/pictures.py`)
shows what lint says today: each diagnostic Neovim shows beside a line (its virtual text,
cut at the window's edge) is the start of one that `cgraph lint` gives now for the same
edits (`next_state: reserv`, and the `next_state: confirm` being completed, emptied)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from cgraph.lint.walk import lint_paths
from tests.conftest import FIXTURES, ROOT

PICTURE = ROOT / "docs" / "img" / "editor.svg"


def shown() -> list[str]:
    """The virtual texts in the picture: each a span starting with Neovim's `●`."""
    spans = re.findall(r"<text[^>]*>([^<]*)</text>", PICTURE.read_text(encoding="utf-8"))
    texts = [" ".join(html.unescape(s).replace("\xa0", " ").split()) for s in spans]
    return [t.lstrip("● ") for t in texts if t.startswith("●")]


def test_the_editor_picture_shows_the_diagnostics_lint_gives_today(tmp_path: Path) -> None:
    for item in (FIXTURES / "lsp").iterdir():
        shutil.copy(item, tmp_path / item.name)
    desk = tmp_path / "desk.yaml"
    text = desk.read_text(encoding="utf-8")
    text = text.replace("next_state: reserve", "next_state: reserv")
    desk.write_text(text.replace("next_state: confirm", "next_state: "), encoding="utf-8")
    said = [" ".join(f"{d.message} hint: {d.hint}".split()) for d in lint_paths([desk]).diagnostics]
    pictured = shown()
    assert len(pictured) >= 2
    stale = [p for p in pictured if not any(s.startswith(p) for s in said)]
    assert stale == [], f"docs/img/editor.svg is out of date (make docs-pictures): {stale}"
