"""The command line is the one reader of `CGRAPH_ALLOW_MODULES`, `CGRAPH_ALLOW_PATHS` and
`CGRAPH_MAX_FILE_SIZE`: it merges them with the flags into the values the library gets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cgraph.cli.usage import environment_limits, read_limits, trust
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust


def test_the_flags_add_to_what_the_environment_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CGRAPH_ALLOW_MODULES", "json,email")
    monkeypatch.setenv("CGRAPH_ALLOW_PATHS", os.pathsep.join([str(tmp_path / "a"), ""]))
    given = trust(["yaml", "json"], [tmp_path / "b"])
    assert given.modules == ("json", "email", "yaml")
    assert given.paths == ((tmp_path / "a").resolve(), (tmp_path / "b").resolve())


def test_without_the_variables_or_flags_nothing_is_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CGRAPH_ALLOW_MODULES", raising=False)
    monkeypatch.delenv("CGRAPH_ALLOW_PATHS", raising=False)
    assert trust() == Trust()


@pytest.mark.parametrize(
    ("variable", "size"), [(None, 20_000_000), ("500k", 500_000), ("not a size", 20_000_000)]
)
def test_a_command_without_the_flag_takes_the_environments_cap(
    monkeypatch: pytest.MonkeyPatch, variable: str | None, size: int
) -> None:
    if variable is None:
        monkeypatch.delenv("CGRAPH_MAX_FILE_SIZE", raising=False)
    else:
        monkeypatch.setenv("CGRAPH_MAX_FILE_SIZE", variable)
    assert environment_limits() == ReadLimits(size)


def test_the_flag_is_the_cap_when_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CGRAPH_MAX_FILE_SIZE", "1M")
    assert read_limits(2_000) == ReadLimits(2_000)
    assert read_limits(None) == ReadLimits(1_000_000)
