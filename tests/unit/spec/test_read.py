from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.diagnostics import Severity
from cgraph.spec.read import read_file, read_text


def _codes(text: str) -> list[tuple[int, int, str]]:
    return [(d.line, d.column, d.code) for d in read_text(text, "t.yaml").diagnostics]


def test_duplicate_keys_are_reported_at_the_second_key() -> None:
    doc = read_text("a: 1\nb:\n  x: 1\n  x: 2\na: 3\n")
    assert [(d.line, d.column, d.code) for d in doc.diagnostics] == [
        (4, 3, "duplicate-key"),
        (5, 1, "duplicate-key"),
    ]
    assert doc.data == {"a": 3, "b": {"x": 2}}
    assert "silently replaces" in doc.diagnostics[0].hint


def test_tabs_in_indentation_are_located() -> None:
    assert _codes("a:\n\tb: 1\n") == [(2, 1, "tab-indent")]


def test_a_tab_inside_a_value_is_fine() -> None:
    doc = read_text("a: 'x\ty'\n")
    assert doc.diagnostics == [] and doc.data == {"a": "x\ty"}


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "OFF"])
def test_yaml11_booleans_stay_text_with_a_warning(word: str) -> None:
    doc = read_text(f"next_state: {word}\n")
    assert doc.data == {"next_state": word}
    (diag,) = doc.diagnostics
    assert (diag.line, diag.column, diag.code, diag.severity) == (
        1,
        13,
        "yaml11-bool",
        Severity.WARNING,
    )
    assert diag.hint == f'quote it: "{word}"'


def test_quoted_yaml11_words_are_silent_and_true_stays_boolean() -> None:
    doc = read_text('a: "no"\nb: true\nc: false\n')
    assert doc.diagnostics == []
    assert doc.data == {"a": "no", "b": True, "c": False}


def test_a_boolean_key_is_an_error_and_kept_as_text() -> None:
    doc = read_text("states:\n  true: 1\n")
    assert [(d.line, d.column, d.code) for d in doc.diagnostics] == [(2, 3, "yaml-bool")]
    assert doc.data == {"states": {"true": 1}}


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("a: [1, 2\nb: 3\n", 1, 4),
        ("a: 'open\n", 1, 4),
        ("a:\n  - 1\n b: 2\n", 3, 2),
        ("key: value: other\n", 1, 11),
    ],
)
def test_syntax_errors_are_located(text: str, line: int, column: int) -> None:
    (diag,) = read_text(text, "t.yaml").diagnostics
    assert (diag.line, diag.column, diag.code) == (line, column, "yaml-syntax")
    assert diag.message.startswith("YAML syntax: ")
    assert "\n" not in diag.message


def test_several_documents_are_one_clear_error() -> None:
    (diag,) = read_text("a: 1\n---\nb: 2\n").diagnostics
    assert diag.message == "YAML syntax: the file holds more than one YAML document"


def test_control_characters_are_located() -> None:
    (diag,) = read_text("a: 1\nb: x\x07\n").diagnostics
    assert (diag.line, diag.column, diag.code) == (2, 5, "yaml-syntax")


def test_recursive_alias_is_an_error_not_a_crash() -> None:
    doc = read_text("a: &x [1, *x]\n")
    assert [d.code for d in doc.diagnostics] == ["yaml-recursive"]


def test_aliases_and_merge_keys_build_plain_data() -> None:
    doc = read_text("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nlist: [*b]\n")
    assert doc.diagnostics == []
    assert doc.data["other"] == {"x": 1, "y": 3}
    assert doc.data["list"] == [{"x": 1, "y": 2}]


def test_complex_keys_are_reported_and_left_out() -> None:
    doc = read_text("a: 1\n[x, y]: 2\n")
    assert [(d.line, d.code) for d in doc.diagnostics] == [(2, "complex-key")]
    assert doc.data == {"a": 1}


def test_scalars_keep_their_types() -> None:
    doc = read_text("i: 12\nh: 0x1f\nf: 1.5\nn: null\ns: '12'\nu: 1_000\n")
    assert doc.data == {"i": 12, "h": 31, "f": 1.5, "n": None, "s": "12", "u": 1000}


def test_locate_points_at_values_or_keys_and_falls_back_to_the_parent() -> None:
    doc = read_text("states:\n  ask:\n    exits:\n      - next_state: x\n")
    assert doc.locate(("states", "ask", "exits", 0, "next_state")) == (4, 21)
    assert doc.locate(("states", "ask"), key=True) == (2, 3)
    assert doc.locate(("states", "ask", "missing")) == (3, 5)
    assert doc.node_at(("states", "ask", "exits", 0, "next_state")).value == "x"  # type: ignore[union-attr]
    assert doc.node_at(("states", "nope")) is None


def test_empty_and_comment_only_files() -> None:
    assert _codes("") == [(1, 1, "empty-file")]
    assert _codes("# nothing\n") == [(1, 1, "empty-file")]


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    assert [d.code for d in read_file(tmp_path / "none.yaml").diagnostics] == ["unreadable"]
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"a: 1\nb: caf\xe9\n")
    (diag,) = read_file(bad).diagnostics
    assert (diag.line, diag.code) == (2, "encoding")


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    diagnostics = read_text("[" * 5000 + "]" * 5000).diagnostics
    assert [(d.line, d.column, d.code) for d in diagnostics] == [(1, 1000, "value-too-large")]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a:\n  b: " + "[" * 150 + "]" * 150, (2, 104)),
        (
            "a:\n" + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1, 150)) + "  " * 150 + "x",
            None,
        ),
        ("- " * 1200 + "x", (1, 1)),
        ("a:\n" + "  " * 600 + "b: 1", (2, 1)),
    ],
)
def test_nesting_over_the_limit_is_located(text: str, where: tuple[int, int] | None) -> None:
    found = [d for d in read_text(text).diagnostics if d.code == "value-too-large"]
    assert len(found) == 1
    assert "nest" in found[0].message
    if where is not None:
        assert (found[0].line, found[0].column) == where


def test_an_integer_over_4300_digits_is_located() -> None:
    doc = read_text("a: 1\nb: " + "9" * 5000 + "\nc: '" + "9" * 5000 + "'\n")
    assert [(d.line, d.column, d.code) for d in doc.diagnostics] == [(2, 4, "value-too-large")]
    assert doc.data["c"] == "9" * 5000


def test_an_alias_bomb_is_refused_where_it_grows_too_large() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    doc = read_text("\n".join(lines))
    (diag,) = doc.diagnostics
    assert (diag.line, diag.column, diag.code) == (6, 5, "value-too-large")  # a5: 5 MB
    assert not doc.ok  # nothing downstream sees the expanded data


def test_shared_values_within_the_limit_load() -> None:
    doc = read_text("a: &a [1, 2, 3]\nb: [*a, *a, *a]\n")
    assert doc.diagnostics == [] and doc.data["b"] == [[1, 2, 3]] * 3


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    doc = read_file(path)
    assert doc.diagnostics == [] and doc.data == {"a": 1}


def test_only_a_regular_file_up_to_the_cap_is_read(tmp_path: Path) -> None:
    from cgraph.spec.files import Refusal, read_bytes, read_head

    path = tmp_path / "g.yaml"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, 100) == b"x" * 100
    refused = read_bytes(path, 99)
    assert isinstance(refused, Refusal) and refused.code == "file-too-large"
    assert "100 bytes, over the 99" in refused.message
    assert read_head(path, 10) == b"x" * 10
    folder = read_bytes(tmp_path)
    assert isinstance(folder, Refusal) and folder.code == "not-a-file"
    assert "the path is a folder" in folder.message
    missing = read_bytes(tmp_path / "none.yaml")
    assert isinstance(missing, Refusal) and missing.code == "unreadable"
    doc = read_file(path, 50)
    assert [(d.code, d.line, d.column) for d in doc.diagnostics] == [("file-too-large", 1, 1)]


def test_a_proc_file_that_reports_no_size_is_still_held_to_the_cap() -> None:
    from cgraph.spec.files import Refusal, read_bytes

    refused = read_bytes("/proc/self/maps", 10)  # size 0 in stat, kilobytes when read
    assert isinstance(refused, Refusal) and "more than 10 bytes" in refused.message


@pytest.mark.parametrize(
    ("text", "size"), [("20M", 20_000_000), ("500k", 500_000), ("1G", 10**9), ("123", 123)]
)
def test_sizes_are_read_in_powers_of_a_thousand(text: str, size: int) -> None:
    from cgraph.spec.limits import parse_size

    assert parse_size(text) == size
