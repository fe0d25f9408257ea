"""The README is a front page: short, with the two set-up commands exactly as the
Makefile runs them, and a link into the docs for the rest."""

from __future__ import annotations

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
