"""The studio for the browser tests: a real `cgraph studio` (or `cgraph serve --studio`)
process on a free port, and Playwright driving the system's Chromium (never a downloaded
browser). Where either is missing the tests skip and say why."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.commands import environment
from tests.serving import Server, free_port, wait_ready


def chromium() -> str:
    """The system's Chromium, or a skip that says how to get it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium on this machine: `make test-tools` installs it (apt-get)")
    return found


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium under Playwright (skips without Playwright or Chromium)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    executable = chromium()
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


ADDRESS = re.compile(r"http://\S+/studio(\?secret=\S+)?")


@dataclass
class Studio(Server):
    """A running studio and the address it printed (with this launch's secret)."""

    address: str = ""

    @property
    def cookies(self) -> dict[str, str]:
        """What the first visit through `address` leaves in a browser."""
        port, secret = urlsplit(self.url).port, parse_qs(urlsplit(self.address).query)
        return {f"cgraph-studio-{port}": secret["secret"][0]} if secret else {}

    def visitor(self, timeout: float = 30.0) -> httpx.Client:
        """A client that came through the printed address."""
        return httpx.Client(base_url=self.url, cookies=self.cookies, timeout=timeout)


@contextmanager
def studio_process(*args: str, folder: Path, cwd: Path) -> Iterator[Studio]:
    """`cgraph ARGS --port <free>` run from `cwd`, until `/healthz` answers; killed after."""
    port = free_port()
    log = folder / f"studio-{port}.log"
    command = [sys.executable, "-m", "cgraph", *args, "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=environment()
        )
    server = Studio(process, f"http://127.0.0.1:{port}", log)
    try:
        wait_ready(server)
        found = ADDRESS.search(server.output())
        assert found is not None, server.output()
        server.address = found.group(0)
        yield server
    finally:
        server.stop()


def shots(default: Path) -> Path:
    """Where the screenshots go: `CGRAPH_STUDIO_SHOTS`, else the test's output folder."""
    folder = Path(os.environ.get("CGRAPH_STUDIO_SHOTS") or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def browser_page(chromium: Any, wait_ms: float) -> Iterator[Any]:
    """A page in a context of its own; the test fails if a script on it raised."""
    context = chromium.new_context(viewport={"width": 1400, "height": 860})
    page = context.new_page()
    page.set_default_timeout(wait_ms)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], errors
