"""The layout table (on the docs' architecture page) names every module, in its own folder's
row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [
    "",
    "session",
    "spec",
    "wiring",
    "lint",
    "runtime",
    "backends",
    "draw",
    "testing",
    "simulate",
    "cli",
    "serve",
    "studio",
    "lsp",
]


def rows() -> dict[str, str]:
    """Folder → its row of the table in the Layout section of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^\| `cgraph/([a-z/]*)` \| (.*) \|$", layout, re.MULTILINE)
    return {folder.rstrip("/"): row for folder, row in found}


def modules(package: str) -> set[str]:
    folder = ROOT / "cgraph" / package
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    if package:  # a sub-package (`llm/`, `handlers/`) is listed with its modules in the row
        for sub in folder.glob("*/__init__.py"):
            names |= {p.stem for p in sub.parent.glob("*.py") if p.stem != "__init__"}
    return names


def test_each_folder_has_one_row_and_each_module_is_named_in_it() -> None:
    table = rows()
    assert sorted(table) == sorted(PACKAGES)
    for package in PACKAGES:
        named = set(re.findall(r"`([a-z_]+)`", table[package]))
        missing = modules(package) - named
        assert not missing, f"the layout row of cgraph/{package}/ does not name {missing}"


def test_no_module_is_named_in_another_folders_row() -> None:
    table = rows()
    for package in PACKAGES:
        for other in PACKAGES:
            if other != package:
                named = set(re.findall(r"`([a-z_]+)`", table[other]))
                strays = (modules(package) - modules(other)) & named
                assert not strays, f"cgraph/{package}/ modules {strays} are in the {other} row"
