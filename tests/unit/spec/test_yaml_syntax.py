"""YAML syntax errors worded for a graph author and placed where the fix goes."""

from __future__ import annotations

import pytest
import yaml

from cgraph.spec.read import read_text
from cgraph.spec.yaml_syntax import GENERIC_HINT, explain

BROKEN = [
    # (name, text, line, column, words in the message, words in the hint)
    ("unclosed quote", 'name: x\ndescription: "open\nstart: a\n', 2, 14, "never closed", "quote"),
    ("unclosed single quote", "a: 'open\n", 1, 4, "never closed", "quote"),
    ("unclosed list", "states: [a, b\nstart: a\n", 1, 9, "`[` list", "`]`"),
    ("unclosed mapping", "a: {x: 1\nb: 3\n", 1, 4, "`{` mapping", "`}`"),
    (
        "a key indented too far",
        "states:\n  a:\n    type: action\n   objective: hi\n",
        4,
        4,
        "column 4",
        "indent it exactly like",
    ),
    (
        "a key indented one space too far after a value",
        "states:\n  a:\n    objective: hi\n     actions: [x]\n",
        4,
        6,
        "`actions:` is indented more than `objective:`",
        "column 5",
    ),
    ("a key indented too little", "a:\n  - 1\n b: 2\n", 3, 2, "lines up with no key", "indent"),
    ("a list where a key goes", "a: 1\n- b\n", 2, 1, "`-` list item", "indent the `-` items"),
    ("a line in a list", "a:\n  - 1\n  x: 2\n", 3, 3, "not a `-` item", "`- `"),
    ("a second colon", "name: x: y\n", 1, 8, "`:`", '"x: y"'),
    ("a list after a key", "a: - b\n", 1, 4, "`- ` list item", "next line"),
    ("a key without a colon", "a: 1\nb\nc: 2\n", 2, 1, "neither `key: value`", "`: `"),
    ("a dash without a space", "a:\n  - x\n  -y\n", 3, 3, "`-y` is not a list item", "`- y`"),
    ("an empty item", "a: [1,,2]\n", 1, 7, "missing before `,`", "extra `,`"),
    ("a list open at the end", "a: [\n", 2, 1, "file ends inside", "`]`"),
    ("a stray indent at the top", "  a: 1\nb: 2\n", 2, 1, "top-level", "column 1"),
    ("a bad escape", 'a: "C:\\path"\n', 1, 7, "`\\p`", "single quotes"),
    ("a backtick", "a: `x`\n", 1, 4, "`` ` ``", "quotes"),
    ("an unknown alias", "a: *nope\n", 1, 4, "`*nope`", "`&nope`"),
    ("a block scalar header", "a: |x\n  t\n", 1, 5, "after `|`", "next line"),
    ("two documents", "a: 1\n---\nb: 2\n", 2, 1, "more than one YAML document", "one graph"),
]


@pytest.mark.parametrize(("text", "line", "column", "said", "hint"), [b[1:] for b in BROKEN])
def test_real_broken_files_get_a_place_a_plain_message_and_a_hint(
    text: str, line: int, column: int, said: str, hint: str
) -> None:
    (diag,) = read_text(text, "t.yaml").diagnostics
    assert (diag.line, diag.column, diag.code) == (line, column, "yaml-syntax"), diag.render()
    assert said in diag.message and hint in diag.hint, diag.render()
    assert diag.hint != GENERIC_HINT and "\n" not in diag.message


@pytest.mark.parametrize(("text", "line", "column", "said", "hint"), [b[1:] for b in BROKEN])
def test_the_pure_python_reader_is_explained_the_same_way(
    text: str, line: int, column: int, said: str, hint: str
) -> None:
    # PyYAML words its errors differently without libyaml ("expected <block end>, but
    # found '-'" for "did not find expected key"): both are explained.
    with pytest.raises(yaml.MarkedYAMLError) as raised:
        yaml.compose(text, Loader=yaml.SafeLoader)
    found = explain(raised.value, text)
    assert (found.line, found.column) == (line, column), found
    assert said in found.message and hint in found.hint, found


def test_an_error_nobody_words_keeps_pyyamls_words_and_the_general_hint() -> None:
    (diag,) = read_text("%YAML 1.1\n%YAML 1.1\n---\na: 1\n", "t.yaml").diagnostics
    assert diag.message == "YAML syntax: found duplicate %YAML directive"
    assert diag.hint == GENERIC_HINT
