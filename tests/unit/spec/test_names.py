"""The reserved names and the qualified-name rule of sub-graph states."""

from __future__ import annotations

from cgraph.spec.model import ID_PATTERN
from cgraph.spec.names import END, SEPARATOR, bare, qualify, split


def test_root_states_keep_their_id_and_sub_graph_states_name_their_file() -> None:
    assert qualify("", "ask") == "ask"
    assert qualify("sub/deep.yaml", "pick") == "sub/deep.yaml#pick"
    assert qualify("sub/deep.yaml", END) == END  # there is one END for every graph


def test_split_undoes_qualify() -> None:
    for key, state in (("", "ask"), ("research.yaml", "search"), ("a/b.yaml", "x.y-z")):
        assert split(qualify(key, state)) == (key, state)
        assert bare(qualify(key, state)) == state


def test_the_separator_cannot_appear_in_a_state_id() -> None:
    assert SEPARATOR not in ID_PATTERN
