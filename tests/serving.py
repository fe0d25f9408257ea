"""Real `cgraph serve` processes for the tests, on free loopback ports, driven by httpx."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.commands import environment
from tests.conftest import FIXTURES, ROOT

SERVE = FIXTURES / "serve"
GRAPHS = SERVE / "graphs"
SCRIPT = SERVE / "script.yaml"
SLOW = SERVE / "slow.yaml"
STARTING_SECONDS = 60.0


def store_of(request: Any, folder: Path) -> str:
    """The store of a test parametrized `sqlite` or `postgresql`: a folder in `folder`, or
    a fresh database of the run's PostgreSQL (the `postgres` fixture)."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres").database())
    return str(folder / "store")


def tokens_file(folder: Path, users: dict[str, str]) -> Path:
    """A `--tokens` file in `folder`: each token and the user it names."""
    path = folder / "tokens"
    path.write_text("".join(f"{token} {user}\n" for token, user in users.items()))
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    """A running `cgraph serve`: its process, its address and what it wrote."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def client(self, token: str | None = None, timeout: float = 30.0) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        kill_group(self.process.pid)
        return int(self.process.returncode)


def kill_group(leader: int) -> None:
    """Whatever is left of a process group: the workers of a `--workers N` server whose
    supervisor was killed with -9 (orphans that would go on serving, and taking the cores,
    for the rest of the run)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)


def start(*args: str, folder: Path, ready: bool = True, **env: str) -> Server:
    """`cgraph serve ARGS --port <free>` from the repository root (with `env` variables
    added); with `ready`, once `/healthz` answers (or fails with what the server wrote)."""
    port = free_port()
    log = folder / f"serve-{port}.log"
    command = [sys.executable, "-m", "cgraph", "serve", *args, "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=environment(**env),
            start_new_session=True,  # its workers in its group, stopped with it
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    if ready:
        wait_ready(server)
    return server


def wait_ready(server: Server) -> None:
    deadline = time.monotonic() + STARTING_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"cgraph serve exited:\n{server.output()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    server.stop(signal.SIGKILL)
    raise AssertionError(f"cgraph serve did not start:\n{server.output()}")


@contextmanager
def serving(*args: str, folder: Path, **env: str) -> Iterator[Server]:
    server = start(*args, folder=folder, **env)
    try:
        yield server
    finally:
        server.stop(signal.SIGKILL)


def events(stream: str) -> list[tuple[str, Any]]:
    """Server-sent events as (name, JSON data) pairs."""
    import json

    found = []
    for block in stream.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        found.append((fields.get("event", ""), json.loads(fields.get("data", "null"))))
    return found
