"""Every process a tool handler starts ends with its worker, however it hides.

Killing the worker's process group is not enough: a handler's child may leave the group
(`setsid`) and a double fork leaves the tree (the grandchild is re-parented when its
parent exits). So, on Linux:

- the worker is a *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphan among
  its descendants is re-parented to it instead of to init, and stays in its tree;
- the worker and everything it starts carry a mark in their environment
  (`CGRAPH_TOOL_WORKER=<token>`), which finds a descendant the tree lost (the worker
  itself crashed, and its orphans went to init);
- to stop it, its descendants and the marked processes are frozen (`SIGSTOP`, so none can
  fork again) until a look finds no new one, then all killed (`SIGKILL`).

Elsewhere the worker's process group is all that is killed. Processes are found in
`/proc`; a process of another user, or one that ended meanwhile, is skipped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

MARK = "CGRAPH_TOOL_WORKER"
"""The environment variable that marks a worker and whatever it starts."""
_PR_SET_CHILD_SUBREAPER = 36
_LOOKS = 50
"""Most looks for new descendants while freezing them: a fork bomb cannot hold a stop."""


def become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans (Linux); whether it did."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only in the worker, once

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """Every visible process id → its parent's id."""
    found: dict[int, int] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # ended while we looked
            continue
        found[int(entry.name)] = int(fields[1])
    return found


def descendants(root: int) -> set[int]:
    """The processes below `root` in the process tree (not `root` itself)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


def marked(token: str) -> set[int]:
    """The processes whose environment carries `MARK=token` (those this user may read)."""
    needle = f"{MARK}={token}".encode()
    found: set[int] = set()
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
    return found


def kill_all(token: str, tree: int | None = None) -> None:
    """Freeze the processes below `tree` (a process id, itself spared) and those marked
    with `token` until a look finds no new one, then kill them all. This process is
    never among them."""
    if not Path("/proc/self").exists():
        return
    frozen: set[int] = set()
    for _ in range(_LOOKS):
        below = descendants(tree) if tree is not None else set()
        found = (below | marked(token)) - frozen - {os.getpid(), tree}
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        frozen |= found
    for pid in frozen:
        _signal(pid, signal.SIGKILL)


def reap() -> None:
    """Collect the exit status of every child that has ended (orphans a subreaper adopted
    would otherwise stay zombies as long as it lives)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _signal(pid: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)
