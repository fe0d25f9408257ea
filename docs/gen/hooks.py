"""MkDocs hooks: what the site generates from the code at every build.

- pages: the format and test-file references (from the published JSON Schemas), the
  command line (from the typer app), the lint rules (from `cgraph/lint/codes.py` and
  lint's own output) and the offline chooser's thresholds (from `Calibration`);
- pictures: the example graphs and the `*.dot` diagrams, drawn with Graphviz;
- `{{ cal.NAME }}` in any page: the offline chooser's threshold NAME in force;
- `{{ http.routes }}`, `{{ http.errors }}`: the HTTP server's endpoints and error statuses;
  `{{ graphs.gallery }}`: every example graph with its picture;
- `{{ doc cgraph.MODULE }}` in any page: that module's docstring, read from its source,
  so prose that explains how a part works is written once, beside the code.

The repository this file sits in is put first on the import path, so a build documents
the tree it is run in, whatever `cgraph` the virtualenv has installed.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import gen_cli  # noqa: E402
import gen_format  # noqa: E402
import gen_http  # noqa: E402
import gen_lint  # noqa: E402
import gen_offline  # noqa: E402
import gen_pictures  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

PAGES: dict[str, Callable[[], str]] = {
    "reference/format.md": gen_format.graph_page,
    "reference/test-format.md": gen_format.test_page,
    "reference/sim-format.md": gen_format.sim_page,
    "reference/cli.md": gen_cli.page,
    "reference/lint-rules.md": gen_lint.page,
    "reference/offline-chooser.md": gen_offline.page,
}
"""Generated page → the function that writes it."""

CALIBRATION = re.compile(r"\{\{\s*cal\.([a-z_]+)\s*\}\}")
TABLES: dict[str, Callable[[], str]] = {
    "http.routes": gen_http.routes,
    "http.errors": gen_http.errors,
    "graphs.gallery": gen_pictures.gallery,
}
"""`{{ NAME }}` in a page → a table generated from the code."""
TABLE = re.compile(r"\{\{\s*(" + "|".join(re.escape(name) for name in TABLES) + r")\s*\}\}")
DOCSTRING = re.compile(r"\{\{\s*doc\s+(cgraph(?:\.[a-z_]+)+)\s*\}\}")


def on_files(files: Files, config: Any) -> Files:
    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    for uri, data in gen_pictures.pictures():
        files.append(File.generated(config, uri, content=data))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    markdown = CALIBRATION.sub(lambda m: gen_offline.value(m.group(1)), markdown)
    markdown = TABLE.sub(lambda m: TABLES[m.group(1)](), markdown)
    return DOCSTRING.sub(lambda m: module_doc(m.group(1)), markdown)


def module_doc(name: str) -> str:
    """A module's docstring, from its source (nothing is imported)."""
    path = ROOT.joinpath(*name.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8")))
    if not doc:
        raise ValueError(f"{name} has no docstring to include")
    return doc
