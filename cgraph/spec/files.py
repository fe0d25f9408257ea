"""Reading a file the format names (a graph, a sub-graph, a test file, a handler's source):
regular files only, up to a size cap, never a wait.

A path may lead anywhere: a link to `/dev/zero` never ends, a FIFO blocks its reader
until a writer comes, a sparse file of gigabytes costs nothing on disk, and a link that
leads back to itself never resolves. Each is refused with a reason and a code before
anything is read: the file is opened without blocking (`O_NONBLOCK`), its kind and size
taken from the open handle, and at most the cap read from it, however the file grows.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cgraph.spec.limits import MAX_FILE_BYTES

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Refusal:
    """Why a file was not read: a diagnostic code, a message and how to fix it."""

    code: str
    message: str
    hint: str


def kind_of(path: str | Path) -> str | None:
    """What `path` is when it is not a regular file (following links): "a FIFO (named
    pipe)", "a folder", ...; None for a regular file or a path that cannot be looked at."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes | Refusal:
    """The bytes of a regular file of at most `limit` bytes (a `ReadLimits.file_size`),
    or why it was refused (`unreadable`, `link-loop`, `not-a-file`, `file-too-large`)."""
    return _read(path, limit, whole=True)


def read_head(path: str | Path, size: int) -> bytes | Refusal:
    """The first `size` bytes of a regular file (all of a shorter one), or why not."""
    return _read(path, size, whole=False)


def _read(path: str | Path, cap: int, *, whole: bool) -> bytes | Refusal:
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        return _not_opened(path, err)
    try:
        info = os.fstat(handle)
        kind = _kind(info.st_mode)
        if kind is not None:
            return not_a_file(kind)
        if whole and info.st_size > cap:
            return too_large(info.st_size, cap)
        return _read_at_most(handle, cap, whole)
    except OSError as err:
        return _unreadable(err)
    finally:
        os.close(handle)


def _read_at_most(handle: int, cap: int, whole: bool) -> bytes | Refusal:
    """Up to `cap` bytes. Read `whole`, a file that grew past the cap while read (or
    reports no size, as `/proc` files do) is refused all the same."""
    chunks: list[bytes] = []
    total, wanted = 0, cap + 1 if whole else cap
    while total < wanted and (chunk := os.read(handle, min(_CHUNK, wanted - total))):
        chunks.append(chunk)
        total += len(chunk)
    if total > cap:
        return too_large(total, cap, more=True)
    return b"".join(chunks)


def _not_opened(path: str | Path, err: OSError) -> Refusal:
    if err.errno == errno.ELOOP:
        return Refusal(
            "link-loop",
            "the file is a link that leads back to itself",
            "point the link at a regular file, or name the file itself",
        )
    kind = kind_of(path) if err.errno in (errno.ENXIO, errno.EOPNOTSUPP) else None
    return not_a_file(kind) if kind is not None else _unreadable(err)


def _unreadable(err: OSError) -> Refusal:
    return Refusal(
        "unreadable",
        f"cannot read file: {err.strerror}",
        "check the path, that a link's target exists, and the file's permissions",
    )


def not_a_file(kind: str) -> Refusal:
    """The refusal of a path that is `kind` ("a FIFO (named pipe)") instead of a file."""
    return Refusal(
        "not-a-file",
        f"the path is {kind}, not a regular file; only regular files are read",
        "name the graph file itself (a link must lead to a regular file)",
    )


def too_large(size: int, cap: int, *, more: bool = False) -> Refusal:
    """The refusal of a file of `size` bytes (at least, with `more`) over `cap`."""
    shown = f"more than {cap:,}" if more else f"{size:,}"
    return Refusal(
        "file-too-large",
        f"the file is {shown} bytes, over the {cap:,} a file may have here",
        "split the graph into sub-graphs, or raise the cap with --max-file-size or "
        "CGRAPH_MAX_FILE_SIZE",
    )
