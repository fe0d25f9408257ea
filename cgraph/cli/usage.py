"""How the commands present themselves in `--help` and in usage errors.

Plain help, as click prints it (no boxes: it reads at any width and needs no rich), with
a usage line in the usual form (`cgraph run [OPTIONS] GRAPH`, `cgraph lint [OPTIONS]
PATH...`) where typer would write `{graph}`, and options named by what they take
(`--store DIR`) rather than by a type (`<path>`).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand

from cgraph.spec.limits import FILE_SIZE_VARIABLE, ReadLimits, parse_size
from cgraph.spec.trust import ALLOW_MODULES_VARIABLE, ALLOW_PATHS_VARIABLE, Trust, trust_from

PLAIN = None
"""`rich_markup_mode` of the apps: click's plain help."""


class Command(TyperCommand):
    """A command whose usage line names its arguments plainly."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:  # typer's click or its own copy
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [usage_of(p) for p in self.get_params(ctx) if isinstance(p, TyperArgument)]


def usage_of(argument: TyperArgument) -> str:
    """`GRAPH`, `PATH...` (one or more), `[PATH]...` (none or more)."""
    name = argument.metavar or (argument.name or "").upper()
    many = "..." if argument.nargs != 1 else ""
    return f"{name}{many}" if argument.required else f"[{name}]{many}"


def choices(kind: type[StrEnum]) -> str:
    """An option's metavar listing its values: `[text|json|github|sarif]`."""
    return "[" + "|".join(member.value for member in kind) + "]"


def _size(value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None


MaxFileSize = Annotated[
    int | None,
    typer.Option(
        "--max-file-size",
        metavar="SIZE",
        envvar=FILE_SIZE_VARIABLE,
        parser=_size,
        show_default=False,
        help="Largest graph, sub-graph or test file read (bytes, or 500k, 20M, 1G). [default: 20M]",
    ),
]
"""`--max-file-size` (or `CGRAPH_MAX_FILE_SIZE`) of the commands that read graph files."""


def read_limits(size: int | None) -> ReadLimits:
    """The limits a command hands the library: `--max-file-size` (typer reads
    `CGRAPH_MAX_FILE_SIZE` for it), else the environment's, else the shipped ones."""
    return ReadLimits(size) if size is not None else environment_limits()


def environment_limits() -> ReadLimits:
    """`CGRAPH_MAX_FILE_SIZE` as limits, for a command without `--max-file-size` (a value
    that is not a size leaves the shipped cap, as the option would refuse it)."""
    text = os.environ.get(FILE_SIZE_VARIABLE)
    try:
        return ReadLimits(parse_size(text)) if text else ReadLimits()
    except ValueError:
        return ReadLimits()


AllowModule = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-module",
        metavar="NAME",
        show_default=False,
        help="Let tool handlers come from this installed module and its submodules too "
        "(repeatable; also CGRAPH_ALLOW_MODULES). A graph's own handlers are Python files "
        "in its folder.",
    ),
]
AllowPath = Annotated[
    list[Path] | None,
    typer.Option(
        "--allow-path",
        metavar="DIR",
        show_default=False,
        help="Let graph files be read from this folder too, besides the root graph's "
        "(repeatable; also CGRAPH_ALLOW_PATHS).",
    ),
]


def trust(modules: list[str] | None = None, paths: list[Path] | None = None) -> Trust:
    """What a command lets graphs reach: `CGRAPH_ALLOW_MODULES` and `CGRAPH_ALLOW_PATHS`,
    read here and nowhere else, with `--allow-module` and `--allow-path` added; the
    library, the tool workers and the server get it as a value (`cgraph.spec.trust`)."""
    environ = os.environ
    given = trust_from(
        environ.get(ALLOW_MODULES_VARIABLE, ""), environ.get(ALLOW_PATHS_VARIABLE, "")
    )
    return given.also(modules or (), paths or ())
