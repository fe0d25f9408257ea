"""The language server is as lean as `cgraph lint`: no litellm, chromadb, torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.acceptance.test_cli_lint import HEAVY

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "lsp"


def test_the_server_imports_no_heavy_package() -> None:
    """What a session of the server runs (lint, the index, completion, hover) imports
    no litellm, chromadb, torch nor the serving packages."""
    probe = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from cgraph.lsp import cursor, server\n"
        "from cgraph.lsp.complete import complete\n"
        "from cgraph.lsp.hover import hover\n"
        f"graph = Path({str(FIXTURES / 'desk.yaml')!r})\n"
        "files = server.Files(graph.parent)\n"
        "files.lint(graph)\n"
        "text = graph.read_text()\n"
        "complete(files, graph, cursor.at(text, 5, 0), 5, 0)\n"
        "hover(files, graph, 5, 0, [])\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
