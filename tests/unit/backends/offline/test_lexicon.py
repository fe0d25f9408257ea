"""The lexicon: one data file loaded into one value, its acts extended by a graph's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cgraph.backends.embed import shared_embedder
from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.backends.offline.lexicon import LEXICON, packaged, parse, with_declared
from cgraph.errors import CgraphError
from cgraph.runtime.ports import ExitOption
from cgraph.spec.load import load_graph
from cgraph.wiring.models import resolve_model
from tests.conftest import FIXTURES

OFFLINE = Path(__file__).resolve().parents[4] / "cgraph" / "backends" / "offline"
SMALL = """\
lists: {YES: [yes, 'no', on]}
maps: {ORDINALS: {first: '0'}}
patterns: {LEADING_YES: '^(?:$YES)\\b'}
exact: {}
acts: {}
"""


def _read_by_code() -> set[str]:
    """Every lexicon entry the offline modules read (`lx.NAME`)."""
    found: set[str] = set()
    for module in OFFLINE.glob("*.py"):
        found |= set(re.findall(r"\blx\.([A-Z_]+)\b", module.read_text(encoding="utf-8")))
    return found


def test_every_entry_the_code_reads_is_in_the_file_and_every_entry_is_read() -> None:
    held = {*LEXICON.lists, *LEXICON.maps, *LEXICON.patterns, "STOP_WORDS", "ACTS"}
    read = _read_by_code()
    assert read - held == set()
    # A list may be read only through the patterns built from it.
    patterns = "\n".join(p.pattern for p in LEXICON.patterns.values())
    unread = {n for n in held - read if n in LEXICON.lists and n not in ("STOP_WORDS",)}
    built = {n for n in unread if re.escape(LEXICON.lists[n][0]).replace("'", "['’]?") in patterns}
    assert unread - built == set()


def test_an_unknown_entry_names_the_ones_there_are() -> None:
    with pytest.raises(AttributeError, match=r"no 'YESS'; it has .*LEADING_YES.*\bYES\b"):
        _ = LEXICON.YESS


def test_scalars_stay_words_and_lists_build_the_patterns() -> None:
    small = parse(SMALL)
    assert small.YES == ("yes", "no", "on")  # no YAML booleans
    assert small.ORDINALS == {"first": 0}
    assert small.LEADING_YES.match("On it") and not small.LEADING_YES.match("maybe")
    assert packaged() is packaged() is LEXICON


def test_a_pattern_naming_no_list_is_a_located_error() -> None:
    with pytest.raises(CgraphError, match=r"custom.yaml: a pattern names no list 'NOPE'"):
        parse(SMALL.replace("$YES", "$NOPE"), "custom.yaml")


def test_a_graphs_acts_replace_the_shipped_ones_by_name_and_add_their_own() -> None:
    graph = load_graph(FIXTURES / "lint" / "acts.yaml")
    acts = with_declared(LEXICON.ACTS, graph.acts)
    names = [a.name for a in acts]
    assert names[: len(LEXICON.ACTS)] == [a.name for a in LEXICON.ACTS]
    assert names[-1] == "refund" and names.count("hand_off") == 1
    hand_off = next(a for a in acts if a.name == "hand_off")
    assert hand_off.examples == ("Can I talk to reception?",)


def test_the_semantic_model_lends_a_graphs_own_act_to_the_exit_that_means_it() -> None:
    graph = load_graph(FIXTURES / "lint" / "acts.yaml")
    made = resolve_model("semantic", graph.model, acts=graph.acts)
    assert isinstance(made, OfflineChooser)
    own = OfflineChooser(embedder=shared_embedder(), acts=graph.acts)
    shipped = OfflineChooser(embedder=shared_embedder())
    exit_ = ExitOption("desk", "The caller asks for a person at the front desk.", "desk")
    assert "Can I talk to reception?" in own.option_texts(exit_).acts
    assert "Can I talk to reception?" not in shipped.option_texts(exit_).acts
    assert [a.name for a in made.acts] == [a.name for a in own.acts]
