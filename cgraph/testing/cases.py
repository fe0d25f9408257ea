"""Test files found and loaded, and their cases expanded into runs (one per phrasing)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cgraph.diagnostics import Diagnostic
from cgraph.errors import GraphError
from cgraph.spec.limits import ReadLimits
from cgraph.spec.read import read_file
from cgraph.spec.testfile import Case, Expect, TestFile, parse_tests

SUFFIXES = (".test.yaml", ".test.yml")


@dataclass(frozen=True, slots=True)
class Step:
    """One turn of a run: the message sent and what must hold after it."""

    user: str
    expect: Expect


@dataclass(frozen=True, slots=True)
class Run:
    """One case with one choice of phrasings: what is run and reported as one line."""

    case: Case
    name: str
    steps: tuple[Step, ...]


def find_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Test files named, and `*.test.yaml` files under folders (recursively, sorted)."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.name.endswith(SUFFIXES))
        else:
            yield path


def load(path: Path, limits: ReadLimits | None = None) -> tuple[TestFile | None, list[Diagnostic]]:
    """A test file (read within `limits`) and the problems found reading it (a missing
    file is one of them)."""
    if not path.is_file():
        problem = "no such file" if not path.exists() else "not a file"
        raise GraphError(f"{path}: {problem}")
    return parse_tests(read_file(path, (limits or ReadLimits()).file_size))


def phrasings(user: str | tuple[str, ...]) -> tuple[str, ...]:
    return (user,) if isinstance(user, str) else user


def expand(case: Case) -> list[Run]:
    """One run with every turn's first phrasing, then one more per further phrasing of a turn.

    Varying one turn at a time keeps each run about one exit's robustness; a product of
    every phrasing would grow without saying more.
    """
    firsts = [phrasings(t.user)[0] for t in case.turns]
    runs = [_run(case, case.name, firsts)]
    for index, turn in enumerate(case.turns):
        for text in phrasings(turn.user)[1:]:
            texts = [*firsts[:index], text, *firsts[index + 1 :]]
            runs.append(_run(case, f"{case.name} [turn {index + 1}: {text!r}]", texts))
    return runs


def _run(case: Case, name: str, texts: list[str]) -> Run:
    steps = tuple(Step(text, turn.expect) for text, turn in zip(texts, case.turns, strict=True))
    return Run(case, name, steps)


def selected(run: Run, patterns: tuple[str, ...]) -> bool:
    """`-k`: any of the case-insensitive substrings, or globs when they have `*` or `?`."""
    return not patterns or any(_matches(run.name.casefold(), p.casefold()) for p in patterns)


def _matches(name: str, wanted: str) -> bool:
    if any(c in wanted for c in "*?["):
        return fnmatch.fnmatchcase(name, wanted)
    return wanted in name
