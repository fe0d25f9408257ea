"""The lint fuzzer: mutated example graphs and hostile files through the real `cgraph lint`.

Each case is one file linted in a subprocess under a time and memory limit (`lint_probe`):
lint must answer with located diagnostics, never a traceback, a crash signal or a hang.
A test run tries a few mutations; `make stress` (`CGRAPH_LINT_FUZZ=N`) tries N.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GRAPHS
from tests.robustness.lint_probe import assert_survives, examples

EXAMPLES = sorted(GRAPHS.glob("*.yaml"))
TEXTS = {path.name: path.read_text(encoding="utf-8") for path in EXAMPLES}

# Pieces a mutation splices in: broken syntax, templates that must never run, aliases,
# numbers and bytes that have crashed YAML readers before.
SNIPPETS = [
    "{{ x",
    "{{ x }",
    "{% if x %}",
    "{# open",
    "{{ 'a' * 10**10 }}",
    "{{ 10**(10**9) }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "&a [x, x, x, x, x, x, x, x]",
    "*a",
    "*undefined_alias",
    "!!python/object/apply:os.system ['true']",
    "!!binary AAAA",
    "1" * 5000,
    "- - - -",
    ": : :",
    "? complex key",
    "\t",
    "\x00",
    "\ufeff",
    "\udcff",
    "[" * 200,
    "{" * 200,
    "'unclosed",
    '"\\x',
    "%YAML 9.9",
    "---",
    "...",
    "<<: *a",
    "next_state: END",
    "type: decision",
    "exits: []",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """An example graph with a few lines deleted, duplicated, re-indented or spliced."""
    lines = TEXTS[draw(st.sampled_from(sorted(TEXTS)))].splitlines()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        action = draw(st.sampled_from(["delete", "duplicate", "indent", "splice", "cut"]))
        if action == "delete" and lines:
            del lines[at : at + draw(st.integers(1, 5))]
        elif action == "duplicate" and lines:
            lines[at:at] = lines[at : at + draw(st.integers(1, 8))]
        elif action == "indent" and lines:
            lines[at] = " " * draw(st.integers(0, 7)) + lines[at].lstrip()
        elif action == "splice":
            piece = draw(st.sampled_from(SNIPPETS) | st.text(max_size=40))
            line = lines[at] if lines else ""
            cut = draw(st.integers(0, len(line)))
            lines[at : at + 1] = [line[:cut] + piece + line[cut:]]
        elif action == "cut" and lines:
            lines = lines[: at + 1]
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str | bytes, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return path


@settings(
    max_examples=examples(6),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=mutated())
def test_mutated_example_graphs_get_located_diagnostics(tmp_path: Path, text: str) -> None:
    assert_survives(write(tmp_path, text))


@settings(
    max_examples=examples(3),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.binary(max_size=4000) | st.text(max_size=2000))
def test_arbitrary_bytes_and_text_get_located_diagnostics(
    tmp_path: Path, data: bytes | str
) -> None:
    assert_survives(write(tmp_path, data))


def _alias_bomb(levels: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return "cgraph: 1\nvariables:\n" + "".join(f"  {line}\n" for line in lines)


def _graph_with(say: str) -> str:
    return (
        "cgraph: 1\nstates:\n  start:\n    type: action\n    objective: Greet.\n"
        f"    say: {say}\n    next_state: END\n"
    )


HOSTILE = {
    "alias bomb": _alias_bomb(9),
    "alias bomb in a state": _alias_bomb(9).replace("variables:", "states:"),
    "deep flow nesting": "x: " + "[" * 40_000 + "]" * 40_000,
    "deep block nesting": "".join(" " * i + "- \n" for i in range(2_000)),
    "deep mappings": "".join(" " * i + f"k{i}:\n" for i in range(0, 3_000, 1)),
    "huge integer": f"cgraph: 1\nvariables:\n  n: {'9' * 100_000}\n",
    "huge scalar": "cgraph: 1\nvariables:\n  s: " + "a" * 3_000_000 + "\n",
    "many states": "cgraph: 1\nstates:\n"
    + "".join(f"  s{i}:\n    type: action\n    objective: o\n" for i in range(5_000)),
    "many exits": _graph_with("hi").replace(
        "    next_state: END\n",
        "    exits:\n"
        + "".join(f"      - {{description: d{i}, next_state: END}}\n" for i in range(5_000)),
    ),
    "long line": "x: " + "y " * 2_000_000,
    "template bomb": _graph_with("\"{{ 'a' * 10**10 }}{{ [1] * 10**9 }}{{ 10**(10**9) }}\""),
    "python tag": "!!python/object/apply:os.system ['touch pwned']\n",
    "binary": bytes(range(256)) * 64,
    "nul bytes": "cgraph: 1\x00\nstates: {}\n",
    "empty": "",
    "only a comment": "# nothing\n",
    "utf-16": "cgraph: 1\n".encode("utf-16"),
    "lone surrogate escape": '"\\udc80"\n',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_get_located_diagnostics(tmp_path: Path, name: str) -> None:
    assert_survives(write(tmp_path, HOSTILE[name]))
    assert not (tmp_path / "pwned").exists()
