"""The site builds as `make docs` and `make check` build it (`mkdocs build --strict`: no
broken link, no missing page), and the built pages load nothing from the network."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import environment
from tests.conftest import ROOT

FETCHED = re.compile(r"""(?:src|href)=["'](?:https?:)?//(?!cgraph\.dev)[^"']+["']""")
"""An attribute that makes a browser fetch something from another host."""


@pytest.mark.slow
def test_the_site_builds_strictly_and_loads_nothing_from_the_network(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=environment(NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pages = list(site.glob("**/*.html"))
    assert len(pages) > 25
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in html, page
        fetched = [m for m in FETCHED.findall(html) if "<link" in m or "src=" in m]
        assert not fetched, f"{page.relative_to(site)} fetches {fetched[:3]}"
    assert (site / "reference" / "format" / "index.html").exists()
    assert (site / "img" / "graphs" / "medical_checkin.svg").exists()
