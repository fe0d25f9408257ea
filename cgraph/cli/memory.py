"""`cgraph memory …`: list, export and delete what cgraph remembers about a user.

A thin layer over `cgraph.backends.memory.chroma`; chromadb is imported only inside the commands,
and these commands never load the embedding model (they read stored records only).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, cast

import typer

from cgraph.cli import cannot_write
from cgraph.cli.usage import PLAIN, choices
from cgraph.spec.model import TIERS, Tier

if TYPE_CHECKING:
    from cgraph.backends.memory.chroma import ChromaMemory
    from cgraph.runtime.ports import Memory

memory_app = typer.Typer(
    name="memory",
    help="List, export and delete the memories kept per user.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=PLAIN,
)


TierName = StrEnum("TierName", [(tier, tier) for tier in TIERS])  # type: ignore[misc]
"""The memory tiers of `cgraph.spec.model.TIERS`, as an option's choices."""


User = Annotated[str, typer.Option(metavar="ID", help="The user whose memories to show or change.")]
Store = Annotated[
    Path,
    typer.Option(
        metavar="DIR", help="The folder given to `cgraph run --store` (memories in DIR/memory)."
    ),
]
Host = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option(metavar="HOST", help="A Chroma server's host, when the graph's memory uses one."),
]
Port = Annotated[int, typer.Option(metavar="PORT", help="The Chroma server's port.")]
Ids = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--id", metavar="ID", help="Delete only this memory (repeatable)."),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before deleting all.")]
Output = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(metavar="FILE", help="Write to FILE instead of stdout."),
]
Session = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        metavar="S",
        help="Only what session S recalls: the user's memories, task-tier ones only S's.",
    ),
]
Tiers = Annotated[
    Optional[list[TierName]],  # noqa: UP045
    typer.Option(
        "--tier", metavar=choices(TierName), help="Only this tier (repeatable); default: all tiers."
    ),
]


def _open(store: Path, host: str | None, port: int) -> ChromaMemory | None:
    """The store to read, or None when no memories were ever kept in `store`."""
    from cgraph.backends.memory.chroma import ChromaMemory, memory_folder

    if host:
        return ChromaMemory(host=host, port=port)
    folder = memory_folder(store)
    return ChromaMemory(folder) if folder.is_dir() else None


def _fail(err: Exception) -> typer.Exit:
    typer.echo(f"error: {getattr(err, 'message', err)}", err=True)
    return typer.Exit(1)


def _line(m: Memory) -> str:
    when = datetime.fromtimestamp(m.created_at, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return f"{m.id}  {m.tier:<8}  {when}  {m.text}"


@memory_app.command("list", short_help="Print a user's memories, oldest first.")
def list_(
    user: User,
    store: Store = Path(".cgraph"),
    host: Host = None,
    port: Port = 8000,
    tier: Tiers = None,
    session: Session = None,
) -> None:
    """Print a user's memories, oldest first: id, tier, time stored (UTC), text."""
    from cgraph.errors import MemoryStoreError

    mem = _open(store, host, port)
    tiers = [cast(Tier, t.value) for t in tier or []]
    try:
        memories = mem.list(user, tiers=tiers, session_id=session) if mem else []
    except MemoryStoreError as err:
        raise _fail(err) from err
    for m in memories:
        typer.echo(_line(m))
    if mem is None:
        typer.echo(_no_store(store), err=True)
    elif not memories:
        typer.echo(f"no memories for user {user!r}", err=True)


def _no_store(store: Path) -> str:
    """Said when `store` holds no memories at all: a mistyped `--store` is the usual cause."""
    from cgraph.backends.memory.chroma import memory_folder

    return f"no memories in {store}: {memory_folder(store)} does not exist"


@memory_app.command(short_help="Write a user's memories as JSON.")
def export(
    user: User,
    store: Store = Path(".cgraph"),
    host: Host = None,
    port: Port = 8000,
    output: Output = None,
) -> None:
    """Write a user's memories as a JSON list (id, text, tier, session, state, turn, time)."""
    from cgraph.errors import MemoryStoreError

    mem = _open(store, host, port)
    try:
        data = mem.export(user) if mem else []
    except MemoryStoreError as err:
        raise _fail(err) from err
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as err:
            typer.echo(f"error: {cannot_write('--output', output, err)}", err=True)
            raise typer.Exit(1) from err
        typer.echo(f"exported {len(data)} memories to {output}", err=True)


@memory_app.command(short_help="Delete some or all of a user's memories.")
def delete(
    user: User,
    store: Store = Path(".cgraph"),
    host: Host = None,
    port: Port = 8000,
    id: Ids = None,
    yes: Yes = False,
) -> None:
    """Delete some (`--id`) or all of a user's memories; prints how many were deleted."""
    from cgraph.errors import MemoryStoreError

    mem = _open(store, host, port)
    if not id and not yes and mem is not None:
        typer.confirm(f"Delete every memory of user {user!r}?", abort=True)
    try:
        deleted = mem.delete(user, id or None) if mem else 0
    except MemoryStoreError as err:
        raise _fail(err) from err
    typer.echo(f"deleted {deleted} memories of user {user!r}")


@memory_app.command()
def users(store: Store = Path(".cgraph"), host: Host = None, port: Port = 8000) -> None:
    """Print every user with memories and how many each has."""
    from cgraph.errors import MemoryStoreError

    mem = _open(store, host, port)
    try:
        counts = [(u, mem.count(u)) for u in mem.users()] if mem else []
    except MemoryStoreError as err:
        raise _fail(err) from err
    for user, count in counts:
        typer.echo(f"{user}\t{count}")
    if mem is None:
        typer.echo(_no_store(store), err=True)


if __name__ == "__main__":
    memory_app()
