"""The README's pictures show what cgraph prints today. The terminal picture
(`docs/img/terminal.svg`, taken by `docs/gen/pictures.py`) is compared with a live run of
the same session: every reason `/why` gives now must be the picture's, word for word (a
bar of 40 % in the picture where a run says 50 % fails here; `make docs-pictures` takes
it again). The studio picture (`docs/img/studio.png`) is compared by its text: the script
keeps the page's words beside it (`docs/img/studio.txt`, with the picture's digest), and a
live studio chatted the same way must show the same words. Every picture the README shows
is one that script takes."""

from __future__ import annotations

import difflib
import hashlib
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import environment
from tests.conftest import GRAPHS, ROOT
from tests.studio import studio_process

sys.path.insert(0, str(ROOT / "docs" / "gen"))
import pictures

pytestmark = pytest.mark.slow

RUN = (sys.executable, "-m", "cgraph", "run", "graphs/medical_checkin.yaml")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _svg_text(path: Path) -> str:
    """The picture's text, its lines joined and its spaces made plain."""
    parts = re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8"))
    return " ".join(" ".join(html.unescape("".join(parts)).replace("\xa0", " ").split()).split())


def test_the_terminal_picture_shows_what_a_run_prints_today(tmp_path: Path) -> None:
    session = "\n".join(pictures.SESSION) + "\n"
    done = subprocess.run(
        [*RUN, "--store", str(tmp_path / "store")],
        input=session,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # `/why` piped, on stderr: a line a choice, `from (type) → to (confidence …): reason`
    reasons = re.findall(r"^\S+ \(\w+\) → .*?: (.+)$", done.stderr, re.MULTILINE)
    assert len(reasons) >= 2, done.stderr
    picture = _svg_text(ROOT / "docs" / "img" / "terminal.svg")
    stale = [r for r in reasons if " ".join(r.split()) not in picture]
    assert stale == [], f"docs/img/terminal.svg is out of date (make docs-pictures): {stale}"


def test_the_studio_picture_shows_what_the_studio_shows_today(
    tmp_path: Path, chromium: Any
) -> None:
    record = pictures.STUDIO_TEXT.read_text(encoding="utf-8")
    head, _, kept = record.partition("\n")
    digest = hashlib.sha256((ROOT / "docs" / "img" / "studio.png").read_bytes()).hexdigest()
    assert head == f"studio.png sha256 {digest}", "docs/img/studio.txt is not studio.png's"
    shutil.copy(GRAPHS / "medical_checkin.yaml", tmp_path / "medical_checkin.yaml")
    args = ("studio", "medical_checkin.yaml", "--no-browser", "--store", str(tmp_path / "store"))
    with studio_process(*args, folder=tmp_path, cwd=tmp_path) as running:
        context = chromium.new_context(viewport=pictures.STUDIO_VIEW)
        try:
            shown = pictures.studio_at_decision(context.new_page(), running.address)
        finally:
            context.close()
    drift = difflib.unified_diff(kept.splitlines(), shown.splitlines(), "picture", "live", n=1)
    assert shown == kept, "docs/img/studio.png is out of date (make docs-pictures):\n" + "\n".join(
        drift
    )


def test_every_picture_the_readme_shows_is_taken_by_the_pictures_script() -> None:
    shown = re.findall(r'src="docs/img/([^"]+)"', README)
    assert shown
    script = (ROOT / "docs" / "gen" / "pictures.py").read_text(encoding="utf-8")
    assert [name for name in shown if f'IMG / "{name}"' not in script] == []
