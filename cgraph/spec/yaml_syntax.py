"""PyYAML's syntax errors in words a graph author can act on, placed where the fix goes.

PyYAML names what its parser expected ("expected <block end>, but found '<scalar>'") and
gives two marks: where it gave up (`problem_mark`) and where the construct it was reading
began (`context_mark`). An unclosed quote or bracket is noticed lines later, at the end of
the file or at the next `:`, so it is placed at its opening; every other problem stays
where PyYAML found it, and the opening is named in the message when it helps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import yaml

GENERIC_HINT = "check indentation, quoting and the previous line"


@dataclass(frozen=True)
class SyntaxProblem:
    """One syntax error, explained: 1-based position, message and hint."""

    line: int
    column: int
    message: str
    hint: str


@dataclass(frozen=True)
class _Marks:
    problem: str
    context: str
    at: tuple[int, int]
    """Where PyYAML noticed the problem."""
    opened: tuple[int, int] | None
    """Where the construct being read began."""
    found: str
    """The character or token named in the problem (`'-'` → `-`), else ""."""
    opening: str = ""
    """The line the construct began on, without its indentation."""
    text: str = ""
    """The file read."""


def explain(err: yaml.MarkedYAMLError, text: str) -> SyntaxProblem:
    """The located, worded form of a PyYAML syntax error in `text` (the file read)."""
    marks = _marks(err, text)
    for applies, word in _RULES:
        if applies(marks):
            (line, column), message, hint = word(marks)
            return SyntaxProblem(line, column, f"YAML syntax: {message}", hint)
    message = marks.problem + (f" ({marks.context})" if marks.context else "")
    return SyntaxProblem(*marks.at, f"YAML syntax: {message}", GENERIC_HINT)


def _marks(err: yaml.MarkedYAMLError, text: str) -> _Marks:
    def point(mark: yaml.Mark | None) -> tuple[int, int] | None:
        return (mark.line + 1, mark.column + 1) if mark is not None else None

    problem = " ".join((err.problem or "invalid YAML").split())
    at = point(err.problem_mark) or point(err.context_mark) or (1, 1)
    named = _NAMED.search(problem)
    # libyaml (the C reader) names no token: the character where it stopped is the one.
    found = named[1] if named else _character(text, err.problem_mark, problem)
    opened = point(err.context_mark)
    lines = text.splitlines()
    opening = lines[opened[0] - 1].strip() if opened and opened[0] <= len(lines) else ""
    return _Marks(problem, err.context or "", at, opened, found, opening, text)


_NAMED = re.compile(r"found (?:character |unknown escape character |undefined alias )?'(.*)'")


def _character(text: str, mark: yaml.Mark | None, problem: str) -> str:
    if mark is None:
        return ""
    if "alias" in problem:  # `*name`: the name
        alias = _ALIAS.match(text, mark.index)
        return alias[1] if alias else ""
    width = 2 if "escape" in problem else 1  # an escape is named by its backslash and letter
    return text[mark.index : mark.index + width].strip()


_ALIAS = re.compile(r"\*([^\s,\[\]{}]+)")


def _where(point: tuple[int, int] | None) -> str:
    return f"line {point[0]}, column {point[1]}" if point else "above"


def _unclosed_quote(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return (
        m.opened or m.at,
        "the quoted text that starts here is never closed",
        'end it with the quote it starts with; inside "…" write \\" for a quote mark',
    )


def _unclosed_flow(m: _Marks) -> tuple[tuple[int, int], str, str]:
    opening, closing = ("[", "]") if "sequence" in m.context else ("{", "}")
    kind = "list" if opening == "[" else "mapping"
    return (
        m.opened or m.at,
        f"the `{opening}` {kind} that starts here is not closed before {_where(m.at)}",
        f"close it with `{closing}`, separate its items with `,`, and quote an item holding `:`",
    )


def _missing_item(m: _Marks) -> tuple[tuple[int, int], str, str]:
    if "stream end" in m.found or not m.found:
        return (
            m.at,
            "the file ends inside a `[…]` or `{…}`",
            "close each `[` with `]`, `{` with `}`",
        )
    return m.at, f"a value is missing before `{m.found}`", "remove the extra `,` or write the item"


def _misaligned(m: _Marks) -> tuple[tuple[int, int], str, str]:
    if m.found == "-":
        return (
            m.at,
            "a `-` list item where a key was expected",
            "indent the `-` items under the key they belong to (`key:`, then `  - item`)",
        )
    if "collection" in m.context:
        return (
            m.at,
            f"this line is not a `-` item of the list that starts at {_where(m.opened)}",
            "indent it like the keys of the item above it, start it with `- ` as a new item,"
            " or move it back to the indentation of the list's key",
        )
    keys = f" of the mapping whose keys start at {_where(m.opened)}" if m.opened else ""
    return (
        m.at,
        f"this line's indentation (column {m.at[1]}) lines up with no key{keys}",
        "indent it exactly like the keys beside it (spaces only), or nest it under a `key:`",
    )


def _outside(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return (
        m.at,
        "this line is outside the file's top-level mapping",
        "top-level keys start at column 1; indent a nested line under its `key:`",
    )


def _no_colon(m: _Marks) -> tuple[tuple[int, int], str, str]:
    if re.match(r"-[^\s-]", m.opening):  # `-item`: a list item needs a space after its dash
        item = m.opening[1:]
        return m.opened or m.at, f"`-{item}` is not a list item", f"write `- {item}`"
    return (
        m.opened or m.at,
        "this line is neither `key: value` nor part of the value above it",
        "add `: ` after the key, or indent the text further to continue the value above",
    )


_KEY = re.compile(r"(\s*)(?:- )?([\w.-]+):(?:\s|$)")


def _stray_colon(m: _Marks) -> tuple[tuple[int, int], str, str]:
    lines = m.text.splitlines()
    here = _KEY.match(lines[m.at[0] - 1]) if m.at[0] <= len(lines) else None
    if here and here.end(2) + 1 == m.at[1]:
        # `key:` first on its line, read into the plain value above: indented too far.
        above = next((k for k in map(_KEY.match, reversed(lines[: m.at[0] - 1])) if k), None)
        if above and above.start(2) < here.start(2):
            column = above.start(2) + 1
            return (
                (m.at[0], here.start(2) + 1),
                f"`{here[2]}:` is indented more than `{above[2]}:` above it, so it reads as "
                f"part of `{above[2]}`'s value",
                f"indent `{here[2]}:` like the keys beside it (column {column}); if it is "
                'text, quote the value ("x: y")',
            )
    return (
        m.at,
        "a `:` here would start a mapping inside a plain value",
        'quote a value that holds ": " ("x: y"); a nested mapping goes on the next lines',
    )


def _stray_dash(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return (
        m.at,
        "a `- ` list item where a value was expected",
        "start the list on the next line, indented under its key; or quote the value",
    )


def _tab(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return m.at, "a tab where YAML needs a space", "replace the tab with spaces"


def _bad_start(m: _Marks) -> tuple[tuple[int, int], str, str]:
    shown = f"`` {m.found} ``" if "`" in m.found else f"`{m.found}`"  # Markdown's code span
    return m.at, f"{shown} cannot start an unquoted value", "put the value in quotes"


def _bad_escape(m: _Marks) -> tuple[tuple[int, int], str, str]:
    if m.found.startswith("\\"):
        escape, at = m.found, m.at
    else:  # the pure-Python reader points at the letter after the backslash
        escape, at = "\\" + m.found, (m.at[0], m.at[1] - 1)
    return (
        at,
        f"`{escape}` is not an escape inside double quotes",
        "write a backslash as `\\\\`, or use single quotes, which have no escapes",
    )


def _no_anchor(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return (
        m.at,
        f"`*{m.found}` refers to no anchor",
        f"define `&{m.found}` on an earlier value, or quote text that starts with `*`",
    )


def _documents(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return m.at, "the file holds more than one YAML document", "keep one graph per file"


def _block_header(m: _Marks) -> tuple[tuple[int, int], str, str]:
    return (
        m.at,
        "after `|` or `>` only `-`, `+` or an indentation digit may follow",
        "start the text on the next line, indented under its key",
    )


_Rule = tuple[Callable[[_Marks], bool], Callable[[_Marks], tuple[tuple[int, int], str, str]]]
_RULES: tuple[_Rule, ...] = (
    (lambda m: "single document" in m.context or "another document" in m.problem, _documents),
    (lambda m: "quoted scalar" in m.context and "found unexpected" in m.problem, _unclosed_quote),
    (lambda m: "flow sequence" in m.context or "flow mapping" in m.context, _unclosed_flow),
    (lambda m: "expected the node content" in m.problem, _missing_item),
    (lambda m: "expected node content" in m.problem, _missing_item),
    (lambda m: "block mapping" in m.context or "block collection" in m.context, _misaligned),
    (lambda m: "<document start>" in m.problem, _outside),
    (lambda m: "simple key" in m.context, _no_colon),
    (lambda m: "mapping values are not allowed" in m.problem, _stray_colon),
    (lambda m: "sequence entries are not allowed" in m.problem, _stray_dash),
    (lambda m: "that cannot start any token" in m.problem and m.found == "\\t", _tab),
    (lambda m: "that cannot start any token" in m.problem, _bad_start),
    (lambda m: "unknown escape character" in m.problem, _bad_escape),
    (lambda m: "undefined alias" in m.problem, _no_anchor),
    (lambda m: "block scalar" in m.context, _block_header),
)
"""(applies, words) pairs, first match wins; an unmatched error keeps PyYAML's words."""
