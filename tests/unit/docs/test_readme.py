"""The README is a front page: short, with the two set-up commands exactly as the
Makefile runs them, and a link into the docs for the rest."""

from __future__ import annotations

import re
from pathlib import Path

from cgraph.lint.walk import lint_paths
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_front_page_of_at_most_about_200_lines() -> None:
    assert len(README.splitlines()) <= 200


def test_the_readme_gives_the_two_set_up_commands() -> None:
    block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ndemo:" in makefile and "\ntest:" in makefile


def test_the_readme_links_into_the_docs() -> None:
    assert "docs/index.md" in README or "make docs" in README


def test_the_readmes_graph_lints_clean(tmp_path: Path) -> None:
    graph = README.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "hello.yaml").write_text(graph, encoding="utf-8")
    (tmp_path / "schemas").symlink_to(ROOT / "schemas")
    result = lint_paths([tmp_path / "hello.yaml"])
    assert result.diagnostics == [], [d.render() for d in result.diagnostics]


PLACEHOLDER = re.compile(r"\{\{\s*(?:cal\.|http\.|graphs\.|doc\s)")
"""What the site's build fills in (docs/gen/hooks.py), which GitHub shows as written."""


def test_every_page_with_a_build_placeholder_is_named_where_the_readme_says_so() -> None:
    docs = ROOT / "docs"
    pages = sorted(
        p.relative_to(ROOT).as_posix()
        for p in docs.rglob("*.md")
        if PLACEHOLDER.search(p.read_text(encoding="utf-8"))
    )
    note = README.split("## Documentation", 1)[1].split("| I want to", 1)[0]
    assert "placeholder" in note and "make docs-serve" in note
    assert pages and [p for p in pages if f"]({p})" not in note] == []


def test_the_docs_home_has_a_row_for_tools_the_studio_and_the_language_server() -> None:
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    table = home.split("## Find what you need", 1)[1].split("\n## ", 1)[0]
    for page in ("concepts/tools.md", "guides/studio.md", "guides/editors.md"):
        assert f"]({page})" in table, page


def test_the_studio_guide_says_each_thing_once() -> None:
    guide = (ROOT / "docs" / "guides" / "studio.md").read_text(encoding="utf-8")
    paragraphs = [p for p in guide.split("\n\n") if "--tokens" in p]
    assert len(paragraphs) == 1, paragraphs  # `--studio` refuses `--tokens`: said once
