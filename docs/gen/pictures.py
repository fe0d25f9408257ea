"""Take the pictures the docs and the README show, from real runs (`make docs-pictures`).

    python docs/gen/pictures.py [--only terminal|report|simulation|graph|editor|studio]

- `docs/img/terminal.svg`: a `cgraph run` session of the check-in in a real terminal
  (tmux), its screen captured with its colours and drawn as an SVG by rich;
- `docs/img/test-report.png`: `cgraph test graphs/tests --html` opened in headless
  Chromium;
- `docs/img/simulate-report.png`: `cgraph simulate --format html` on the seeded help desk
  (`tests/fixtures/sim/`), a run's transcript open, screenshotted by headless Chromium;
- `docs/img/medical_checkin.svg`: the check-in graph as `cgraph render` draws it (the
  README's picture; the site draws every graph at build, see `gen_pictures.py`);
- `docs/img/editor.svg`: Neovim in tmux talking to `cgraph lsp` on a graph with a misspelt
  `next_state` (its diagnostic) and a `next_state` being completed;
- `docs/img/studio.png`: `cgraph studio` on the check-in, chatted to its key decision, the
  last turn's moves open, in headless Chromium under Playwright at 1366×768; the page's
  text as shown goes to `docs/img/studio.txt`, with the picture's digest.

They are committed, so building the site needs neither a browser nor a terminal; run this
again when what they show changes (`tests/acceptance/test_readme_pictures.py` fails when
the terminal picture no longer shows what a run prints, or the studio's what a live studio
shows; `tests/unit/docs/test_editor_picture.py` when the editor's shows diagnostics lint no
longer gives).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # playwright is imported where a picture is taken
    from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
CGRAPH = Path(sys.executable).parent / "cgraph"
PROMPT = "you ›"
SESSION = (
    "Hi, I'm ready for my check-in",
    "Yes, I took all of them this morning",
    "No, I haven't needed it",
    "/why",
)
"""What the terminal picture's user types."""
HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--window-size=1280,1400",
)


def environment() -> dict[str, str]:
    """The command's environment: this tree first on the path, nothing from the network."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TERM="xterm-256color")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env["ANONYMIZED_TELEMETRY"] = "False"
    return env


def terminal() -> Path:
    """A check-in in tmux, captured with colours, drawn as an SVG."""
    from rich.console import Console
    from rich.text import Text

    name = f"cgraph-docs-{os.getpid()}"
    with tempfile.TemporaryDirectory() as store:
        command = f"{CGRAPH} run graphs/medical_checkin.yaml --store {store}"
        tmux = ["tmux", "-L", name]
        subprocess.run(
            [*tmux, "new-session", "-d", "-x", "120", "-y", "60", "-c", str(ROOT), command],
            check=True,
            env=environment(),
        )
        try:
            _wait_for(tmux, PROMPT, 1)
            for count, line in enumerate(SESSION, start=2):
                subprocess.run([*tmux, "send-keys", "-t", "0", line, "Enter"], check=True)
                _wait_for(tmux, PROMPT, count)
            screen = _capture(tmux)
        finally:
            subprocess.run([*tmux, "kill-server"], check=False)
    screen = re.sub(r"session [0-9a-f]{12}", "session 3f9c2a41d0b7", screen)
    console = Console(
        record=True, width=120, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text.from_ansi(screen.rstrip() + "\n"))
    svg = console.export_svg(title="cgraph run graphs/medical_checkin.yaml")
    out = IMG / "terminal.svg"
    out.write_text(_offline_svg(svg), encoding="utf-8")
    return out


EDITOR_INIT = """\
vim.o.termguicolors = true
vim.o.number = true
vim.o.signcolumn = 'yes'
vim.o.completeopt = 'menuone,noselect'
vim.o.pumheight = 8
vim.o.shortmess = vim.o.shortmess .. 'c'
vim.diagnostic.config({ update_in_insert = true, virtual_text = { prefix = '●' } })
vim.cmd('highlight Pmenu guibg=#2f3545 guifg=#e8e8e8')
vim.cmd('highlight PmenuSel guibg=#4f6fb0 guifg=#ffffff')
vim.api.nvim_create_autocmd('FileType', { pattern = 'yaml', callback = function(args)
  local id = vim.lsp.start_client({ name = 'cgraph', cmd = { '%s', 'lsp' },
                                    root_dir = vim.fn.getcwd() })
  vim.lsp.buf_attach_client(args.buf, id)
  vim.bo[args.buf].omnifunc = 'v:lua.vim.lsp.omnifunc'
end })
"""
"""Neovim 0.7's own LSP client started on YAML files (newer versions: see the docs' page)."""


def editor() -> Path:
    """Neovim in tmux with `cgraph lsp`: a diagnostic, and a `next_state` completed."""
    from rich.console import Console
    from rich.text import Text

    if shutil.which("nvim") is None:
        raise SystemExit("pictures: needs Neovim (apt-get install neovim)")
    name = f"cgraph-editor-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for item in (ROOT / "tests" / "fixtures" / "lsp").iterdir():
            shutil.copy(item, folder / item.name)
        desk = folder / "desk.yaml"
        text = desk.read_text(encoding="utf-8").replace("next_state: reserve", "next_state: reserv")
        desk.write_text(text, encoding="utf-8")
        init = folder / "init.lua"
        init.write_text(EDITOR_INIT % CGRAPH, encoding="utf-8")
        tmux = ["tmux", "-L", name]
        command = f"nvim -u {init} +50 -c 'normal zz' desk.yaml"
        subprocess.run(
            [*tmux, "new-session", "-d", "-x", "100", "-y", "34", "-c", tmp, command],
            check=True,
            env=environment(),
        )
        try:
            _wait_for(tmux, "not a state", 1)
            for keys in (["/next_state: confirm", "Enter"], ["$", "c", "i", "w"], ["C-x", "C-o"]):
                subprocess.run([*tmux, "send-keys", "-t", "0", *keys], check=True)
                time.sleep(1.0)
            _wait_for(tmux, "action state", 1)
            screen = _capture(tmux)
        finally:
            subprocess.run([*tmux, "kill-server"], check=False)
    console = Console(
        record=True, width=100, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text.from_ansi(screen.rstrip() + "\n"))
    svg = console.export_svg(title="nvim desk.yaml (cgraph lsp)")
    out = IMG / "editor.svg"
    out.write_text(_offline_svg(svg), encoding="utf-8")
    return out


def _capture(tmux: list[str]) -> str:
    done = subprocess.run(
        [*tmux, "capture-pane", "-t", "0", "-p", "-e", "-J", "-S", "-"],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _wait_for(tmux: list[str], prompt: str, count: int, timeout: float = 60) -> None:
    """Until the screen shows the prompt `count` times (and the spinners are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", _capture(tmux))
        if plain.count(prompt) >= count:
            time.sleep(0.3)
            return
        time.sleep(0.2)
    raise SystemExit(f"pictures: the terminal never showed the prompt {count} times")


def _offline_svg(svg: str) -> str:
    """rich's SVG without its web font (the site loads nothing from the network)."""
    return re.sub(r',?\s*url\("https?://[^"]+"\)\s*format\("[a-z0-9]+"\)', "", svg)


def report() -> Path:
    """The HTML test report of the example graphs, screenshotted by headless Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("pictures: needs chromium (apt-get install chromium)")
    out = IMG / "test-report.png"
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        subprocess.run(
            [str(CGRAPH), "test", "graphs/tests/medical_checkin.test.yaml", "--html", str(page)],
            cwd=ROOT,
            env=environment(),
            check=False,
            capture_output=True,
        )
        if not page.exists():
            raise SystemExit("pictures: cgraph test wrote no report")
        subprocess.run(
            [browser, *HEADLESS, f"--screenshot={out}", page.as_uri()],
            check=True,
            capture_output=True,
        )
    return out


def simulation() -> Path:
    """The HTML report of the seeded help desk's simulation, a run's transcript open."""
    out = IMG / "simulate-report.png"
    with tempfile.TemporaryDirectory() as tmp:
        sim = "tests/fixtures/sim/helpdesk.sim.yaml"
        command = [str(CGRAPH), "simulate", sim, "-f", "html", "--out", tmp]
        subprocess.run(command, cwd=ROOT, env=environment(), check=False, capture_output=True)
        page = Path(tmp) / "helpdesk" / "report.html"
        if not page.exists():
            raise SystemExit("pictures: cgraph simulate wrote no report")
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            view = browser.new_page(viewport={"width": 1400, "height": 1000})
            view.goto(page.as_uri())
            view.click("#runs tbody tr:nth-child(32)")  # a greeter sent to the operator
            view.screenshot(path=str(out), full_page=True)
            browser.close()
    return out


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("pictures: needs chromium (apt-get install chromium)")
    return found


STUDIO_SESSION = (
    "Hi",
    "Yes, I'm ready.",
    "Yes, I took all my pills.",
    "No, I didn't need it.",
    "No chest pain.",
    "No, breathing is fine.",
)
"""What the studio picture's user types: the check-in up to its key decision."""


def studio() -> Path:
    """The studio page after the check-in's key decision, its last turn's moves open; beside
    it, `studio.txt`: the page's text as the picture shows it, which the README's drift test
    compares with a live studio's."""
    from playwright.sync_api import sync_playwright

    out = IMG / "studio.png"
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(ROOT / "graphs" / "medical_checkin.yaml", Path(tmp) / "medical_checkin.yaml")
        command = [str(CGRAPH), "studio", "medical_checkin.yaml", "--no-browser"]
        command += ["--store", str(Path(tmp) / "store"), "--port", "8799"]
        log = Path(tmp) / "studio.log"
        with log.open("wb") as written:
            process = subprocess.Popen(
                command, cwd=tmp, env=environment(), stdout=written, stderr=subprocess.STDOUT
            )
        try:
            address = _studio_address(log)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=_chromium(), args=["--no-sandbox"]
                )
                page = browser.new_page(viewport=STUDIO_VIEW)
                shown = studio_at_decision(page, address)
                page.screenshot(path=str(out))
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=10)
    STUDIO_TEXT.write_text(studio_record(out, shown), encoding="utf-8")
    return out


STUDIO_VIEW: ViewportSize = {"width": 1366, "height": 768}
STUDIO_TEXT = IMG / "studio.txt"
"""What `studio.png` shows, as text: the picture's digest, then the page's words."""


def studio_at_decision(page: Any, address: str) -> str:
    """Chat a studio page at `address` to the check-in's key decision, open the last turn's
    moves, and return the page's text as shown (ids and times made fixed)."""
    page.set_default_timeout(60_000)
    page.goto(address)
    page.wait_for_selector("body[data-ready='1']")
    for number, text in enumerate(STUDIO_SESSION, 1):
        page.fill("#text", text)
        page.press("#text", "Enter")
        page.wait_for_selector(f"li.turn[data-turn='{number}']:not(.pending)")
        page.wait_for_selector("body:not([data-busy='1'])")
    last = f"li.turn[data-turn='{len(STUDIO_SESSION)}'] details.why"
    page.evaluate(f'document.querySelector("{last}").open = true')
    page.evaluate("document.getElementById('messages').scrollTop = 1e6")
    page.wait_for_timeout(500)
    return studio_words(page.inner_text("body"))


def studio_words(text: str) -> str:
    """The page's text, one line a line shown, with what differs between runs made fixed."""
    text = re.sub(r"\b[0-9a-f]{12,}\b", "3f9c2a41d0b7", text)  # session ids
    text = re.sub(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b", "0 ms", text)  # how long a turn took
    text = re.sub(r"\b\d{1,2}:\d{2}(?::\d{2})?\b", "00:00", text)  # clock times
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line) + "\n"


def studio_record(picture: Path, shown: str) -> str:
    return f"{picture.name} sha256 {_digest(picture)}\n{shown}"


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _studio_address(log: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"http://\S+/studio(\?secret=\S+)?", log.read_text(errors="replace"))
        if found:
            return found.group(0)
        time.sleep(0.2)
    raise SystemExit(f"pictures: the studio did not start:\n{log.read_text(errors='replace')}")


def graph() -> Path:
    """The check-in graph, drawn as `cgraph render` draws it."""
    out = IMG / "medical_checkin.svg"
    subprocess.run(
        [str(CGRAPH), "render", "graphs/medical_checkin.yaml", "-o", str(out)],
        cwd=ROOT,
        env=environment(),
        check=True,
    )
    return out


def main() -> None:
    takers = {
        "terminal": terminal,
        "report": report,
        "simulation": simulation,
        "graph": graph,
        "editor": editor,
        "studio": studio,
    }
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(takers), action="append")
    chosen = parser.parse_args().only or list(takers)
    for name in chosen:
        print(f"pictures: {takers[name]().relative_to(ROOT)}")


if __name__ == "__main__":
    main()
