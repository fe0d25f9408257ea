"""Every link of the docs and of the README leads somewhere: a page, a picture or a file
that exists (generated ones included), and a heading that page has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.unit.docs.pages import DOCS, anchors, links, pages, slug


def _generated() -> dict[str, str]:
    """Site path → Markdown (pages) or "" (pictures) of what the build generates."""
    import gen_pictures
    import hooks

    found = {uri: make() for uri, make in hooks.PAGES.items()}
    for graph in gen_pictures.example_graphs():
        found[gen_pictures.graph_picture_uri(graph)] = ""
    for source in DOCS.glob("**/*.dot"):
        found[source.relative_to(DOCS).with_suffix(".svg").as_posix()] = ""
    return found


GENERATED = _generated()


def _anchors_of(uri: str) -> set[str]:
    if uri in GENERATED:
        text = GENERATED[uri]
        found = set(re.findall(r"\{#([A-Za-z0-9_-]+)\}", text))
        return found | {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
    return anchors(DOCS / uri)


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_every_link_of_a_page_leads_to_something_that_exists(page: Path) -> None:
    for target in links(page):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        if path:
            uri = (page.parent / path).resolve().relative_to(DOCS.resolve()).as_posix()
        else:
            uri = page.relative_to(DOCS).as_posix()
        exists = uri in GENERATED or (DOCS / uri).is_file()
        assert exists, f"{page.name} links to {target}, which does not exist"
        if anchor and uri.endswith(".md"):
            assert anchor in _anchors_of(uri), f"{page.name} links to {target}: no such heading"


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    for target in links(ROOT / "README.md"):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.partition("#")[0]
        assert (ROOT / path).exists(), f"README links to {target}, which does not exist"


FRONT_PAGE_TASKS = {
    "collect a slot": "concepts/slots.md#collecting-a-slot",
    "add a global exit": "concepts/global-exits.md#global-exits",
    "run against a local model": "concepts/models.md#local-servers",
    "run in CI": "guides/testing.md#in-ci-and-pre-commit",
    "serve it": "guides/serving.md",
}
"""What a new user looks for first, each one click from the docs' front page."""


@pytest.mark.parametrize("task", sorted(FRONT_PAGE_TASKS))
def test_the_front_page_links_to_what_a_new_user_looks_for(task: str) -> None:
    assert FRONT_PAGE_TASKS[task] in set(links(DOCS / "index.md")), task
