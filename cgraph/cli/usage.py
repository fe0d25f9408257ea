"""How the commands present themselves in `--help` and in usage errors.

Plain help, as click prints it (no boxes: it reads at any width and needs no rich), with
a usage line in the usual form (`cgraph run [OPTIONS] GRAPH`, `cgraph lint [OPTIONS]
PATH...`) where typer would write `{graph}`, and options named by what they take
(`--store DIR`) rather than by a type (`<path>`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from typer.core import TyperArgument, TyperCommand

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
